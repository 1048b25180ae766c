//! The few calls of usrsctp (the FreeBSD SCTP stack as a userland
//! library, Debian's libusrsctp2) that an SCTP host needs, loaded at run
//! time: the workspace builds and runs everything else on machines
//! without the library, and a missing library is an error that says what
//! to install. Layouts checked against /usr/include/usrsctp.h of
//! libusrsctp-dev 0.9.5 on x86-64 (see the size tests below).

use std::ffi::c_void;

use libloading::Library;

pub const IPPROTO_SCTP: i32 = 132;
pub const SCTP_BINDX_ADD_ADDR: i32 = 0x8001;
pub const SCTP_NODELAY: i32 = 4;
pub const SCTP_GET_PEER_ADDR_INFO: i32 = 0x101;
pub const SCTP_SENDV_SNDINFO: u32 = 1;
/// `spinfo_state` values.
pub const SCTP_ACTIVE: i32 = 1;
pub const SCTP_INACTIVE: i32 = 2;

#[repr(C)]
#[derive(Default)]
pub struct SndInfo {
    pub sid: u16,
    pub flags: u16,
    pub ppid: u32,
    pub context: u32,
    pub assoc_id: u32,
}

/// `struct sctp_paddrinfo`: the peer address in, its state and
/// congestion state out.
#[repr(C)]
pub struct PaddrInfo {
    pub address: libc::sockaddr_storage,
    pub assoc_id: u32,
    pub state: i32,
    pub cwnd: u32,
    /// Milliseconds.
    pub srtt: u32,
    pub rto: u32,
    pub mtu: u32,
}

pub type Socket = c_void;

type SysctlSet = unsafe extern "C" fn(u32) -> i32;

/// The library and its entry points. Only one per process: usrsctp keeps
/// global state (its sysctls, timers, raw sockets).
pub struct Usrsctp {
    _lib: Library,
    pub init: unsafe extern "C" fn(u16, *const c_void, *const c_void),
    pub finish: unsafe extern "C" fn() -> i32,
    pub socket: unsafe extern "C" fn(i32, i32, i32, *const c_void, *const c_void, u32, *mut c_void) -> *mut Socket,
    pub bindx: unsafe extern "C" fn(*mut Socket, *mut libc::sockaddr, i32, i32) -> i32,
    pub listen: unsafe extern "C" fn(*mut Socket, i32) -> i32,
    pub accept: unsafe extern "C" fn(*mut Socket, *mut libc::sockaddr, *mut libc::socklen_t) -> *mut Socket,
    pub connectx: unsafe extern "C" fn(*mut Socket, *const libc::sockaddr, i32, *mut u32) -> i32,
    pub sendv: unsafe extern "C" fn(*mut Socket, *const c_void, usize, *mut libc::sockaddr, i32, *mut c_void, libc::socklen_t, u32, i32) -> isize,
    pub recvv: unsafe extern "C" fn(*mut Socket, *mut c_void, usize, *mut libc::sockaddr, *mut libc::socklen_t, *mut c_void, *mut libc::socklen_t, *mut u32, *mut i32) -> isize,
    pub setsockopt: unsafe extern "C" fn(*mut Socket, i32, i32, *const c_void, libc::socklen_t) -> i32,
    pub getsockopt: unsafe extern "C" fn(*mut Socket, i32, i32, *mut c_void, *mut libc::socklen_t) -> i32,
    pub getpaddrs: unsafe extern "C" fn(*mut Socket, u32, *mut *mut libc::sockaddr) -> i32,
    pub freepaddrs: unsafe extern "C" fn(*mut libc::sockaddr),
    pub shutdown: unsafe extern "C" fn(*mut Socket, i32) -> i32,
    pub set_non_blocking: unsafe extern "C" fn(*mut Socket, i32) -> i32,
    pub close: unsafe extern "C" fn(*mut Socket),
    pub sysctl_cmt_on_off: SysctlSet,
    pub sysctl_cmt_use_dac: SysctlSet,
    pub sysctl_nrsack_enable: SysctlSet,
    pub sysctl_buffer_splitting: SysctlSet,
    pub sysctl_heartbeat_interval_default: SysctlSet,
    pub sysctl_rto_min_default: SysctlSet,
    pub sysctl_rto_initial_default: SysctlSet,
    pub sysctl_sendspace: SysctlSet,
    pub sysctl_recvspace: SysctlSet,
    pub sysctl_ecn_enable: SysctlSet,
    pub sysctl_peer_chunk_oh: SysctlSet,
}

pub const LIBRARY: &str = "libusrsctp.so.2";

impl Usrsctp {
    pub fn load() -> Result<Usrsctp, String> {
        // SAFETY: loading a C library runs its initialisers; usrsctp's do
        // nothing but set up static data.
        let lib = unsafe { Library::new(LIBRARY) }.map_err(|e| format!("{LIBRARY} not found ({e}): apt-get install libusrsctp2 (or libusrsctp-dev)"))?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the symbol's C signature is the field's type, as
                // declared in usrsctp.h; the library outlives the pointer
                // (both live in this struct).
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| format!("{LIBRARY}: {}: {e}", $name))?
            };
        }
        Ok(Usrsctp {
            init: sym!("usrsctp_init"),
            finish: sym!("usrsctp_finish"),
            socket: sym!("usrsctp_socket"),
            bindx: sym!("usrsctp_bindx"),
            listen: sym!("usrsctp_listen"),
            accept: sym!("usrsctp_accept"),
            connectx: sym!("usrsctp_connectx"),
            sendv: sym!("usrsctp_sendv"),
            recvv: sym!("usrsctp_recvv"),
            setsockopt: sym!("usrsctp_setsockopt"),
            getsockopt: sym!("usrsctp_getsockopt"),
            getpaddrs: sym!("usrsctp_getpaddrs"),
            freepaddrs: sym!("usrsctp_freepaddrs"),
            shutdown: sym!("usrsctp_shutdown"),
            set_non_blocking: sym!("usrsctp_set_non_blocking"),
            close: sym!("usrsctp_close"),
            sysctl_cmt_on_off: sym!("usrsctp_sysctl_set_sctp_cmt_on_off"),
            sysctl_cmt_use_dac: sym!("usrsctp_sysctl_set_sctp_cmt_use_dac"),
            sysctl_nrsack_enable: sym!("usrsctp_sysctl_set_sctp_nrsack_enable"),
            sysctl_buffer_splitting: sym!("usrsctp_sysctl_set_sctp_buffer_splitting"),
            sysctl_heartbeat_interval_default: sym!("usrsctp_sysctl_set_sctp_heartbeat_interval_default"),
            sysctl_rto_min_default: sym!("usrsctp_sysctl_set_sctp_rto_min_default"),
            sysctl_rto_initial_default: sym!("usrsctp_sysctl_set_sctp_rto_initial_default"),
            sysctl_sendspace: sym!("usrsctp_sysctl_set_sctp_sendspace"),
            sysctl_recvspace: sym!("usrsctp_sysctl_set_sctp_recvspace"),
            sysctl_ecn_enable: sym!("usrsctp_sysctl_set_sctp_ecn_enable"),
            sysctl_peer_chunk_oh: sym!("usrsctp_sysctl_set_sctp_peer_chunk_oh"),
            _lib: lib,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes and offsets usrsctp.h gives (gcc, x86-64).
    #[test]
    fn layouts_match_the_header() {
        assert_eq!(std::mem::size_of::<SndInfo>(), 16);
        assert_eq!(std::mem::size_of::<PaddrInfo>(), 152);
        assert_eq!(std::mem::offset_of!(PaddrInfo, state), 132);
        assert_eq!(std::mem::offset_of!(PaddrInfo, cwnd), 136);
        assert_eq!(std::mem::offset_of!(PaddrInfo, srtt), 140);
    }
}

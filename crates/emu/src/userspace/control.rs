//! The control file of a host on mplab's stack: run-time commands, as
//! `ip mptcp endpoint ...` is for a kernel host.

/// Directory of the mplab hosts' control files.
pub const CONTROL_DIR: &str = "/run/mplab-us";

/// The control file of the mplab host in namespace `ns`.
///
/// Run-time commands for an mplab host, what `ip mptcp endpoint change /
/// delete` is for a kernel host (and how the interop tests drive the
/// mplab-initiated MP_PRIO, REMOVE_ADDR and MP_FASTCLOSE). The host picks
/// the file up within 20 ms, removes it and applies each line:
///
/// * `backup ADDR` / `nobackup ADDR`: MP_PRIO on every subflow from local
///   address ADDR, and the flag on those it opens later
///   (`Connection::set_local_backup`): the peer should send on it only
///   when nothing else works;
/// * `remove ADDR`: the address goes away: REMOVE_ADDR with its id, and
///   its subflows end (`Connection::remove_local`); `add ADDR` puts it back;
/// * `abort [FLOW]`: MP_FASTCLOSE (a RST for plain TCP) on the flow's
///   connection, or on every connection of the host.
///
/// A scenario's `prio`, `remove_addr` and `add_addr` events (and the
/// mobility events that expand into them) come this way; it is also an
/// operator's and the tests' hook. Write with [`send_control`] (atomic: a
/// file appears whole).
pub fn control_path(ns: &str) -> std::path::PathBuf {
    std::path::Path::new(CONTROL_DIR).join(format!("{ns}.ctl"))
}

/// Hands `commands` (one per line) to the mplab host in namespace `ns`.
/// Fails if the previous commands were not picked up yet.
pub fn send_control(ns: &str, commands: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(CONTROL_DIR)?;
    let path = control_path(ns);
    if path.exists() {
        return Err(std::io::Error::new(std::io::ErrorKind::WouldBlock, format!("{}: earlier commands still pending", path.display())));
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, commands)?;
    std::fs::rename(&tmp, &path)
}

//! Transparent huge pages for long simulations.
//!
//! A data-centre run reads tens of megabytes (packets, link queues,
//! subflow state) in no particular order. With 4 KiB pages most of those
//! reads miss the TLB as well as the cache, and each miss walks the page
//! tables. glibc backs its heap with transparent huge pages (2 MiB) when the
//! tunable `glibc.malloc.hugetlb=1` is set; on this kernel's default THP
//! mode (`madvise`) nothing else does. The tunable is read when a program
//! starts, so a program that wants it re-executes itself once with it set.
//! Measured on the k=8 fat-tree benchmark, both variants running at once:
//! 0.95 of the wall time, results unchanged.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;

const TUNABLE: &str = "glibc.malloc.hugetlb";

/// Re-executes the running program with `glibc.malloc.hugetlb=1` added to
/// `GLIBC_TUNABLES`, keeping its arguments, `argv[0]` and the rest of its
/// environment. Returns without doing anything when the tunable is already
/// set (by the user, or by the re-execution itself), when
/// `MPLAB_NO_HUGE_PAGES` is set, or when the re-execution fails. Call it
/// first thing in `main`, before any thread starts.
pub fn reexec_with_huge_pages() {
    if std::env::var_os("MPLAB_NO_HUGE_PAGES").is_some() {
        return;
    }
    let Some(value) = tunables_with_huge_pages(&std::env::var_os("GLIBC_TUNABLES").unwrap_or_default()) else { return };
    let Ok(exe) = std::env::current_exe() else { return };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| OsString::from("mplab"));
    // Only returns on failure; the program then goes on as it is.
    let _ = std::process::Command::new(exe).arg0(arg0).args(args).env("GLIBC_TUNABLES", value).exec();
}

/// `GLIBC_TUNABLES` with the huge-page tunable added, or `None` when it
/// names that tunable already (whatever its value: the user's choice).
fn tunables_with_huge_pages(current: &OsStr) -> Option<OsString> {
    if current.to_string_lossy().split(':').any(|t| t.split('=').next() == Some(TUNABLE)) {
        return None;
    }
    let mut value = current.to_os_string();
    if !value.is_empty() {
        value.push(":");
    }
    value.push(format!("{TUNABLE}=1"));
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_the_tunable_once_and_keeps_the_others() {
        let t = |s: &str| tunables_with_huge_pages(OsStr::new(s)).map(|v| v.into_string().unwrap());
        assert_eq!(t("").as_deref(), Some("glibc.malloc.hugetlb=1"));
        assert_eq!(t("glibc.malloc.arena_max=2").as_deref(), Some("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"));
        assert_eq!(t("glibc.malloc.hugetlb=1"), None);
        assert_eq!(t("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0"), None);
    }
}

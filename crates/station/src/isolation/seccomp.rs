//! The system calls a guest is refused (seccomp), compiled once with
//! `seccompiler` (rust-vmm's compiler, no libseccomp) and installed by the
//! launcher right before `exec`, after `no_new_privs`.
//!
//! Refused with EPERM, everything else allowed:
//!
//! - `ioprio_set`: a guest starts in `IOPRIO_CLASS_IDLE` and must stay
//!   there. The kernel lets any process move itself to best-effort (only
//!   the real-time class needs a capability), so without this a guest could
//!   `ionice -c2 -n0` its way back to the owner's level. Its `io` cgroup
//!   weight is the lowest as well (`cgroup_io.rs`).
//! - `io_uring_setup` and `io_setup` (Linux AIO): each request of either
//!   carries an I/O priority of its own (`sqe->ioprio`, `aio_reqprio` with
//!   `IOCB_FLAG_IOPRIO`), which the kernel accepts for any best-effort
//!   level without a capability and which a filter cannot see (it is in
//!   memory, not an argument). Refusing the ring and the context refuses
//!   every such request; programs fall back to ordinary reads and writes
//!   (glibc's POSIX AIO uses threads, not these calls), as they do under
//!   Docker's default profile, which refuses io_uring too.
//! - `keyctl`, `add_key`, `request_key`: the kernel keyrings of a uid are
//!   not namespaced and outlive its processes (the user keyring lives as
//!   long as the kernel keeps the uid's record, the persistent keyring for
//!   days): a guest could leave a secret there for the next guest leased
//!   the same slot. Docker's default profile refuses them for the same
//!   reason.
//!
//! Not for CRIU jobs: an unprivileged dump cannot read a seccomp filter
//! (`PTRACE_SECCOMP_GET_FILTER` needs `CAP_SYS_ADMIN`).

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The refused calls.
fn refused() -> [i64; 6] {
    [
        libc::SYS_ioprio_set,
        libc::SYS_io_uring_setup,
        libc::SYS_io_setup,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
    ]
}

/// The guest filter for this machine's architecture, compiled once;
/// `None` where seccompiler does not know the architecture (logged).
pub(crate) fn guest_filter() -> Option<&'static BpfProgram> {
    static FILTER: OnceLock<Option<BpfProgram>> = OnceLock::new();
    FILTER
        .get_or_init(|| match compile() {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!(error = %e,
                    "no seccomp filter for guests: they can leave the idle I/O class and use \
                     the kernel keyrings");
                None
            }
        })
        .as_ref()
}

fn compile() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> =
        refused().into_iter().map(|n| (n, Vec::new())).collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// Installs `filter` on the calling thread (with `no_new_privs`).
///
/// # Safety
/// Forked child before `exec`: only `prctl` and `seccomp` calls.
pub(crate) unsafe fn install(filter: &[seccompiler::sock_filter]) -> std::io::Result<()> {
    seccompiler::apply_filter(filter).map_err(|e| match e {
        seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => e,
        _ => std::io::Error::from_raw_os_error(libc::EINVAL),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_here() {
        let f = guest_filter().expect("a filter for this architecture");
        assert!(f.len() > 4);
    }

    #[test]
    fn a_filtered_child_cannot_set_its_io_priority_use_io_rings_or_touch_keys() {
        let f = guest_filter().unwrap().clone();
        // SAFETY: the child makes raw syscalls only and exits with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above.
            unsafe {
                if install(&f).is_err() {
                    libc::_exit(10);
                }
                // IOPRIO_CLASS_BE (2) << 13 | level 0.
                let r = libc::syscall(libc::SYS_ioprio_set, 1, 0, 2 << 13);
                let e = *libc::__errno_location();
                if r == 0 || e != libc::EPERM {
                    libc::_exit(11);
                }
                let r = libc::syscall(libc::SYS_keyctl, 0, -4, 0, 0, 0);
                let e = *libc::__errno_location();
                if r >= 0 || e != libc::EPERM {
                    libc::_exit(12);
                }
                // io_uring_setup(1, NULL) and io_setup(1, NULL): refused
                // before their arguments are looked at.
                for (n, code) in [(libc::SYS_io_uring_setup, 14), (libc::SYS_io_setup, 15)] {
                    let r = libc::syscall(n, 1, 0);
                    let e = *libc::__errno_location();
                    if r >= 0 || e != libc::EPERM {
                        libc::_exit(code);
                    }
                }
                // Others still work.
                if libc::getpid() <= 0 {
                    libc::_exit(13);
                }
                libc::_exit(0)
            }
        }
        let mut st = 0;
        // SAFETY: waiting for our child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        assert!(libc::WIFEXITED(st), "{st:#x}");
        assert_eq!(libc::WEXITSTATUS(st), 0);
    }
}

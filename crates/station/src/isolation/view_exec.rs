//! Carrying out a guest's [`MountPlan`] in the forked child (`view.rs`
//! says what the plan holds and why).
//!
//! The child has just made its own mount namespace with every mount
//! private. Then, as bubblewrap does:
//!
//! 1. a scratch tmpfs on the plan's base directory; in it `newroot` (bound
//!    on itself, so that it is a mount of its own) and `oldroot`;
//! 2. `pivot_root(".", "oldroot")`: the scratch tmpfs is `/`, the host's
//!    root `/oldroot`, whatever the scratch tmpfs hid included;
//! 3. the plan's steps, from `/oldroot/…` into `/newroot/…`;
//! 4. `/oldroot` detached; `pivot_root` into `/newroot` and the scratch
//!    root detached under it;
//! 5. `chdir` to the sandbox: the working directory the launcher set
//!    before belongs to the detached tree (a guest left there could walk
//!    the host's whole file system), so it must be set again.
//!
//! Only raw system calls on data prepared before the fork run here. A
//! step that fails stops the start: the child reports the step's number
//! and errno on a pipe ([`Failure`]) and the launcher names the step.

use std::ffi::CString;

/// One step of a plan; every path is absolute in the scratch root.
#[derive(Debug)]
pub(crate) enum Step {
    /// A directory (mode exact, the umask is 0 meanwhile); one that
    /// exists is fine.
    Mkdir {
        path: CString,
        mode: u32,
    },
    /// An empty file to bind a file on (one that exists is fine).
    Touch {
        path: CString,
    },
    Symlink {
        target: CString,
        path: CString,
    },
    /// A file of the scratch root with this content (a bind source).
    Write {
        path: CString,
        content: Vec<u8>,
    },
    /// A fresh tmpfs (nosuid, nodev) with these options.
    Tmpfs {
        path: CString,
        data: CString,
    },
    /// A bind mount, recursive where the kernel can make the whole tree
    /// read-only; always nosuid, and nodev but for a device node.
    Bind {
        src: CString,
        dst: CString,
        writable: bool,
    },
    /// A device node bound on a file (nosuid; usable, so not nodev).
    Device {
        src: CString,
        dst: CString,
    },
    /// A `devpts` instance of the guest's own.
    Devpts {
        path: CString,
    },
    /// An existing mount made read-only (nosuid, nodev).
    ReadOnly {
        path: CString,
    },
}

/// A guest's root, ready for the forked child.
#[derive(Debug)]
pub struct MountPlan {
    base: CString,
    steps: Vec<Step>,
    sandbox: CString,
    /// `mount_setattr(2)` exists (Linux 5.12): recursive read-only binds.
    setattr: bool,
}

/// Which part of [`MountPlan::enter`] failed, and the errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// A step's index, or one of the `PHASE_*` values.
    pub step: u32,
    pub errno: i32,
}

const PHASE_SCRATCH: u32 = u32::MAX;
const PHASE_PIVOT_IN: u32 = u32::MAX - 1;
const PHASE_PIVOT_OUT: u32 = u32::MAX - 2;
const PHASE_SANDBOX: u32 = u32::MAX - 3;

/// `AT_RECURSIVE` for `mount_setattr`.
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Whether this kernel has `mount_setattr(2)`: called with an invalid
/// descriptor it answers EBADF, without it ENOSYS.
fn has_mount_setattr() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        let attr = libc::mount_attr {
            attr_set: 0,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: a syscall with a valid struct pointer and its size; the
        // descriptor -1 makes it fail without touching anything.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                -1,
                c"".as_ptr(),
                libc::AT_EMPTY_PATH as libc::c_uint,
                &attr as *const libc::mount_attr,
                std::mem::size_of::<libc::mount_attr>(),
            )
        };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS)
    })
}

fn text(c: &CString) -> std::borrow::Cow<'_, str> {
    c.to_string_lossy()
}

impl MountPlan {
    pub(crate) fn new(base: CString, steps: Vec<Step>, sandbox: CString) -> Self {
        MountPlan {
            base,
            steps,
            sandbox,
            setattr: has_mount_setattr(),
        }
    }

    /// The steps in words, one line each (logs, tests).
    pub fn describe(&self) -> Vec<String> {
        self.steps.iter().map(describe_step).collect()
    }

    /// What `f` names, in words.
    pub fn describe_failure(&self, f: Failure) -> String {
        let what = match f.step {
            PHASE_SCRATCH => format!("scratch root on {}", text(&self.base)),
            PHASE_PIVOT_IN => "pivot_root into the scratch root".to_string(),
            PHASE_PIVOT_OUT => "pivot_root into the guest's root".to_string(),
            PHASE_SANDBOX => format!("chdir {}", text(&self.sandbox)),
            i => self
                .steps
                .get(i as usize)
                .map_or_else(|| format!("step {i}"), describe_step),
        };
        format!("{what}: {}", std::io::Error::from_raw_os_error(f.errno))
    }

    /// Builds the guest's root and moves into it (see the module comment).
    ///
    /// # Safety
    /// Forked child only, in a mount namespace of its own whose mounts are
    /// private, as root: raw system calls on the plan's data.
    pub(crate) unsafe fn enter(&self) -> Result<(), Failure> {
        let fail = |step: u32| Failure {
            step,
            // SAFETY: reading errno.
            errno: unsafe { *libc::__errno_location() },
        };
        // SAFETY: see the function's contract.
        unsafe {
            let old_mask = libc::umask(0);
            if libc::mount(
                c"tmpfs".as_ptr(),
                self.base.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"mode=0755".as_ptr().cast(),
            ) < 0
                || libc::chdir(self.base.as_ptr()) < 0
                || libc::mkdir(c"newroot".as_ptr(), 0o755) < 0
                || libc::mount(
                    c"newroot".as_ptr(),
                    c"newroot".as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) < 0
                || libc::mkdir(c"oldroot".as_ptr(), 0o755) < 0
            {
                return Err(fail(PHASE_SCRATCH));
            }
            if libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c"oldroot".as_ptr()) < 0
                || libc::chdir(c"/".as_ptr()) < 0
            {
                return Err(fail(PHASE_PIVOT_IN));
            }
            for (i, step) in self.steps.iter().enumerate() {
                if !self.run(step) {
                    return Err(fail(i as u32));
                }
            }
            if libc::umount2(c"/oldroot".as_ptr(), libc::MNT_DETACH) < 0
                || libc::chdir(c"/newroot".as_ptr()) < 0
                || libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) < 0
                || libc::umount2(c".".as_ptr(), libc::MNT_DETACH) < 0
                || libc::chdir(c"/".as_ptr()) < 0
            {
                return Err(fail(PHASE_PIVOT_OUT));
            }
            if libc::chdir(self.sandbox.as_ptr()) < 0 {
                return Err(fail(PHASE_SANDBOX));
            }
            libc::umask(old_mask);
        }
        Ok(())
    }

    /// One step; false with errno set when it failed.
    ///
    /// # Safety
    /// As [`MountPlan::enter`].
    unsafe fn run(&self, step: &Step) -> bool {
        let exists_ok = |r: libc::c_int| {
            // SAFETY: reading errno.
            r == 0 || unsafe { *libc::__errno_location() } == libc::EEXIST
        };
        // SAFETY: see the function's contract.
        unsafe {
            match step {
                Step::Mkdir { path, mode } => exists_ok(libc::mkdir(path.as_ptr(), *mode)),
                Step::Touch { path } => {
                    exists_ok(libc::mknod(path.as_ptr(), libc::S_IFREG | 0o644, 0))
                }
                Step::Symlink { target, path } => {
                    exists_ok(libc::symlink(target.as_ptr(), path.as_ptr()))
                }
                Step::Write { path, content } => {
                    let fd = libc::open(
                        path.as_ptr(),
                        libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
                        0o644,
                    );
                    if fd < 0 {
                        return false;
                    }
                    let mut done = 0usize;
                    while done < content.len() {
                        let n =
                            libc::write(fd, content[done..].as_ptr().cast(), content.len() - done);
                        if n <= 0 {
                            libc::close(fd);
                            return false;
                        }
                        done += n as usize;
                    }
                    libc::close(fd) == 0
                }
                Step::Tmpfs { path, data } => {
                    libc::mount(
                        c"tmpfs".as_ptr(),
                        path.as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV,
                        data.as_ptr().cast(),
                    ) == 0
                }
                Step::Devpts { path } => {
                    libc::mount(
                        c"devpts".as_ptr(),
                        path.as_ptr(),
                        c"devpts".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NOEXEC,
                        c"newinstance,ptmxmode=0666,mode=620".as_ptr().cast(),
                    ) == 0
                }
                Step::Bind { src, dst, writable } => self.bind(src, dst, *writable, false),
                Step::Device { src, dst } => self.bind(src, dst, true, true),
                Step::ReadOnly { path } => {
                    libc::mount(
                        std::ptr::null(),
                        path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_REMOUNT
                            | libc::MS_BIND
                            | libc::MS_RDONLY
                            | libc::MS_NOSUID
                            | libc::MS_NODEV,
                        std::ptr::null(),
                    ) == 0
                }
            }
        }
    }

    /// A bind mount, then its flags: with `mount_setattr` on the whole
    /// tree (submounts too), else on the one mount of a non-recursive
    /// bind (so that no submount escapes the flags).
    ///
    /// # Safety
    /// As [`MountPlan::enter`].
    unsafe fn bind(&self, src: &CString, dst: &CString, writable: bool, device: bool) -> bool {
        let ro = if writable { 0 } else { libc::MS_RDONLY };
        let nodev = if device { 0 } else { libc::MS_NODEV };
        // SAFETY: see the function's contract.
        unsafe {
            let rec = if self.setattr { libc::MS_REC } else { 0 };
            if libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | rec,
                std::ptr::null(),
            ) < 0
            {
                return false;
            }
            if self.setattr {
                let attr = libc::mount_attr {
                    attr_set: libc::MOUNT_ATTR_NOSUID
                        | if device { 0 } else { libc::MOUNT_ATTR_NODEV }
                        | if writable { 0 } else { libc::MOUNT_ATTR_RDONLY },
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                return libc::syscall(
                    libc::SYS_mount_setattr,
                    libc::AT_FDCWD,
                    dst.as_ptr(),
                    AT_RECURSIVE,
                    &attr as *const libc::mount_attr,
                    std::mem::size_of::<libc::mount_attr>(),
                ) == 0;
            }
            libc::mount(
                std::ptr::null(),
                dst.as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT | libc::MS_BIND | libc::MS_NOSUID | nodev | ro,
                std::ptr::null(),
            ) == 0
        }
    }
}

fn describe_step(s: &Step) -> String {
    match s {
        Step::Mkdir { path, mode } => format!("mkdir {} {mode:o}", text(path)),
        Step::Touch { path } => format!("touch {}", text(path)),
        Step::Symlink { target, path } => format!("symlink {} -> {}", text(path), text(target)),
        Step::Write { path, content } => format!("write {} ({} bytes)", text(path), content.len()),
        Step::Tmpfs { path, data } => format!("tmpfs {} {}", text(path), text(data)),
        Step::Bind { src, dst, writable } => format!(
            "bind {} {} -> {}",
            if *writable { "rw" } else { "ro" },
            text(src),
            text(dst)
        ),
        Step::Devpts { path } => format!("devpts {}", text(path)),
        Step::Device { src, dst } => format!("device {} -> {}", text(src), text(dst)),
        Step::ReadOnly { path } => format!("read-only {}", text(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_name_their_step() {
        let p = MountPlan::new(
            c"/exec".into(),
            vec![Step::Tmpfs {
                path: c"/newroot/tmp".into(),
                data: c"mode=1777".into(),
            }],
            c"/exec/g".into(),
        );
        assert_eq!(p.describe(), vec!["tmpfs /newroot/tmp mode=1777"]);
        let f = p.describe_failure(Failure {
            step: 0,
            errno: libc::EPERM,
        });
        assert!(f.starts_with("tmpfs /newroot/tmp mode=1777: "), "{f}");
        let f = p.describe_failure(Failure {
            step: PHASE_SANDBOX,
            errno: libc::ENOENT,
        });
        assert!(f.starts_with("chdir /exec/g: "), "{f}");
    }
}

//! A guest's own network: a network namespace of its own, connected to the
//! outside world through a user-mode TCP/IP stack, `slirp4netns`.
//!
//! In its namespace the guest has a loopback of its own and one interface,
//! `tap0` (10.0.2.100/24, gateway 10.0.2.2, resolver 10.0.2.3), served by
//! a `slirp4netns` process in the host's namespace, which opens ordinary
//! sockets on the guest's behalf. So the guest reaches whatever the host
//! could reach by address, the host's own routable addresses included (a
//! scheduler on the submit machine that its workers call back), but:
//!
//! - not the host's loopback: `--disable-host-loopback` refuses 10.0.2.2,
//!   and 127.0.0.1 is the guest's own (nothing the owner bound there,
//!   nothing another guest bound there);
//! - not the host's sockets in `/proc/net`, which shows the guest's own;
//! - a port the guest listens on is in its namespace only: nothing on the
//!   host, the owner included, can connect to it or see it (slirp4netns
//!   forwards nothing inwards unless asked through its API socket, which
//!   is not opened).
//!
//! The helper runs sandboxed (`--enable-sandbox`: its own mount namespace,
//! every capability dropped but `CAP_NET_BIND_SERVICE`) with its seccomp
//! filter (`--enable-seccomp`), and dies with the guest (the starter kills
//! it) or with the daemon (`--exit-fd` is the read end of the daemon's
//! lifeline pipe, which reads end-of-file once the daemon is gone).
//!
//! Why slirp4netns rather than passt's `pasta` (both Debian 12): measured on
//! the development machine, slirp4netns was ready in 42–45 ms and pasta
//! (0.0~git20230309) in 355 ms; that pasta cannot join a namespace made by
//! root once it has dropped to `nobody` ("Couldn't switch to pasta
//! namespaces") and so must keep running as root (`--runas 0`), copies
//! the host's addresses into the namespace by default (the host's own
//! address is then the guest's, which breaks calling back to it), maps
//! the gateway to the host's loopback and forwards ports both ways unless
//! told not to. `docs/security.md` has the figures.

use super::IsolationError;
use std::fs::File;
use std::io::Read;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `[isolation] network`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkMode {
    /// A network of its own for each guest wherever guests get namespaces
    /// (a station that lends to others); the host's otherwise (a station
    /// that is not root runs its own user's jobs). Without slirp4netns
    /// where it is needed, the station does not start.
    #[default]
    Auto,
    /// A network of its own for each guest, or the station does not start.
    Private,
    /// The host's network (the owner's choice; `glean up`'s default, where
    /// the owner is the submitter).
    Host,
}

impl NetworkMode {
    /// The user-mode stack guests are connected with, if they get their
    /// own network: `namespaces` says whether guests get namespaces at
    /// all. `Err`: the start-time error.
    pub fn stack(self, namespaces: bool) -> Result<Option<UserModeStack>, IsolationError> {
        match (self, namespaces) {
            (NetworkMode::Host, _) => {
                tracing::info!("guests share the host's network ([isolation] network = \"host\")");
                Ok(None)
            }
            (NetworkMode::Auto, false) => {
                tracing::info!("guests share the host's network: they get no namespaces here");
                Ok(None)
            }
            (NetworkMode::Private, false) => Err(IsolationError::Network(
                "[isolation] network = \"private\" needs guest namespaces (root, \
                 namespaces = \"auto\" or \"required\")"
                    .into(),
            )),
            (NetworkMode::Auto | NetworkMode::Private, true) => {
                let s = UserModeStack::find().map_err(IsolationError::Network)?;
                tracing::info!(stack = %s.program().display(),
                    "guests get a network of their own (no host loopback, no listening ports \
                     visible to the owner)");
                Ok(Some(s))
            }
        }
    }
}

/// The guest's resolver (slirp4netns forwards it to the host's).
pub const GUEST_DNS: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 3);

/// How long the helper may take to bring the guest's interface up.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Where the user-mode stack is looked for.
const SEARCH: [&str; 3] = ["/usr/bin", "/usr/local/bin", "/bin"];

/// The user-mode stack a station connects its guests with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserModeStack {
    program: PathBuf,
}

impl UserModeStack {
    /// `slirp4netns` on this host, or why not (for the start-time error).
    pub fn find() -> Result<Self, String> {
        SEARCH
            .iter()
            .map(|d| Path::new(d).join("slirp4netns"))
            .find(|p| p.is_file())
            .map(|program| UserModeStack { program })
            .ok_or_else(|| {
                "slirp4netns not found (looked in /usr/bin, /usr/local/bin, /bin): \
                 install the slirp4netns package, or set [isolation] network = \"host\" \
                 to give guests the host's network"
                    .to_string()
            })
    }

    /// The program, for logs.
    pub fn program(&self) -> &Path {
        &self.program
    }
}

/// One guest's network namespace and the helper serving it. Dropping it
/// stops the helper; the namespace goes with the guest's last process.
#[derive(Debug)]
pub struct GuestNet {
    ns: OwnedFd,
    helper: Child,
}

/// A network namespace of its own, made on a short-lived thread (a
/// thread's `unshare` changes that thread only) and kept by descriptor.
fn new_netns() -> Result<OwnedFd, IsolationError> {
    let at = Path::new("/proc/thread-self/ns/net");
    std::thread::spawn(move || -> std::io::Result<OwnedFd> {
        // SAFETY: unshare on this thread alone; it exits right after.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(OwnedFd::from(File::open(at)?))
    })
    .join()
    .map_err(|_| IsolationError::io(at, std::io::Error::other("namespace thread panicked")))?
    .map_err(|e| IsolationError::io(at, e))
}

fn pipe() -> Result<(OwnedFd, OwnedFd), IsolationError> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(IsolationError::io(
            Path::new("pipe"),
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: two fresh descriptors, owned from here on.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl GuestNet {
    /// A new namespace with the helper ready in it (its interface up).
    /// `exit_fd`: a descriptor that reads end-of-file when the helper must
    /// go (the daemon's lifeline), or `None`. Blocking (tens of ms).
    pub fn new(stack: &UserModeStack, exit_fd: Option<RawFd>) -> Result<Self, IsolationError> {
        let started = Instant::now();
        let ns = new_netns()?;
        let (ready_r, ready_w) = pipe()?;
        let keep = [
            Some(ns.as_raw_fd()),
            Some(ready_w.as_raw_fd()),
            exit_fd.filter(|f| *f >= 0),
        ];
        let mut cmd = Command::new(&stack.program);
        cmd.arg("--configure")
            .arg("--mtu=65520")
            .arg("--disable-host-loopback")
            .arg("--enable-sandbox")
            .arg("--enable-seccomp")
            .arg(format!("--ready-fd={}", ready_w.as_raw_fd()))
            .arg("--netns-type=path");
        if let Some(e) = keep[2] {
            cmd.arg(format!("--exit-fd={e}"));
        }
        cmd.arg(format!("/proc/self/fd/{}", ns.as_raw_fd()))
            .arg("tap0")
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let hook = move || -> std::io::Result<()> {
            // slirp4netns's sandbox makes only `/` private (not `MS_REC`)
            // before it pivots and detaches the old root, so the detach of
            // every shared submount it inherits propagates to the host: a
            // lending station would unmount the owner's `ip netns`
            // namespaces under `/run/netns` (measured: `ip netns exec`
            // then fails with EINVAL). A mount namespace of the helper's
            // own, private throughout, keeps its unmounts to itself.
            // SAFETY: unshare and mount in the forked child, before exec,
            // on C string constants (both async-signal-safe syscalls).
            unsafe {
                if libc::unshare(libc::CLONE_NEWNS) < 0
                    || libc::mount(
                        std::ptr::null(),
                        c"/".as_ptr(),
                        std::ptr::null(),
                        libc::MS_REC | libc::MS_PRIVATE,
                        std::ptr::null(),
                    ) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for fd in keep.into_iter().flatten() {
                // SAFETY: clearing close-on-exec on descriptors the parent
                // keeps open until the helper is ready.
                if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        };
        // SAFETY: the hook only makes async-signal-safe syscalls.
        unsafe {
            cmd.pre_exec(hook);
        }
        let mut helper = cmd.spawn().map_err(|source| IsolationError::Spawn {
            program: stack.program.clone(),
            source,
        })?;
        drop(ready_w);
        // What the helper says goes to the log (a pipe nobody read would
        // stop it once full).
        if let Some(err) = helper.stderr.take() {
            let pid = helper.id();
            let _ = std::thread::Builder::new()
                .name("slirp4netns-log".into())
                .spawn(move || {
                    use std::io::BufRead;
                    for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                        tracing::debug!(pid, "slirp4netns: {line}");
                    }
                });
        }
        let net = GuestNet { ns, helper };
        // Ready: one byte on the pipe. End-of-file: the helper died.
        let mut ready = File::from(ready_r);
        let mut byte = [0u8; 1];
        let got = wait_readable(&ready, READY_WITHIN).and_then(|()| ready.read(&mut byte));
        let mut net = net;
        match got {
            Ok(1) => {
                tracing::debug!(
                    ms = started.elapsed().as_millis() as u64,
                    pid = net.helper.id(),
                    "guest network ready"
                );
                Ok(net)
            }
            other => {
                let _ = net.helper.kill();
                let status = net.helper.wait();
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => format!(
                        "it ended ({}) before the guest's network was up; its messages are \
                         in the station's debug log",
                        status.map_or_else(|e| e.to_string(), |s| s.to_string())
                    ),
                };
                Err(IsolationError::io(
                    &stack.program,
                    std::io::Error::other(why),
                ))
            }
        }
    }

    /// The namespace, for the guest to join (`setns`) before it drops root.
    pub fn fd(&self) -> RawFd {
        self.ns.as_raw_fd()
    }

    /// The helper's pid.
    pub fn helper_pid(&self) -> u32 {
        self.helper.id()
    }
}

impl Drop for GuestNet {
    fn drop(&mut self) {
        let _ = self.helper.kill();
        let _ = self.helper.wait();
    }
}

/// Waits until `f` is readable (or at end of file), at most `within`.
fn wait_readable(f: &File, within: Duration) -> std::io::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("not ready within {within:?}"),
            ));
        }
        let mut p = libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: poll on one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms.max(1)) };
        if r > 0 {
            return Ok(());
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

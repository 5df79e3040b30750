//! Taking on a user's filesystem credentials on the current thread only.
//!
//! Linux keeps credentials per thread; glibc's `setgroups`/`setuid` hide
//! that by signalling every thread of the process to make the same change
//! (POSIX semantics). The raw system calls here change only the calling
//! thread, which is a short-lived thread made for one operation (see the
//! module docs of `userfs`).
//!
//! What is changed: the supplementary groups, the fsgid and the fsuid —
//! exactly what the kernel checks for file access and uses as the owner
//! of created files. The real, effective and saved uids stay 0, so the
//! user can neither signal nor ptrace this thread. Then every capability
//! of the thread is dropped (effective, permitted, inheritable), so no
//! capability (e.g. CAP_DAC_OVERRIDE, CAP_SYS_RESOURCE) can stand in for
//! the user's own rights. Everything is read back before any path is
//! touched, and once more after the work.

use super::UnixUser;
use std::io;

#[cfg(not(target_pointer_width = "64"))]
compile_error!("userfs uses the 32-bit-id credential syscalls of 64-bit Linux");

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAP_V3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Makes the calling thread act on files as `user`, then checks it does.
pub(super) fn assume(user: &UnixUser) -> Result<(), String> {
    let groups: Vec<libc::gid_t> = user.groups.clone();
    // SAFETY: pointer and length describe `groups`; affects this thread.
    let r = unsafe {
        libc::syscall(
            libc::SYS_setgroups,
            groups.len() as libc::c_long,
            groups.as_ptr(),
        )
    };
    if r != 0 {
        return Err(format!("setgroups: {}", io::Error::last_os_error()));
    }
    // setfs[ug]id report failure only by leaving the id unchanged, which
    // `check` reads back below.
    // SAFETY: integer argument; affects this thread.
    unsafe { libc::syscall(libc::SYS_setfsgid, libc::c_long::from(user.gid)) };
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_setfsuid, libc::c_long::from(user.uid)) };
    drop_capabilities()?;
    check(user)
}

/// Verifies the calling thread's fsuid, fsgid, groups and (empty)
/// capabilities are those [`assume`] set.
pub(super) fn check(user: &UnixUser) -> Result<(), String> {
    let (fsuid, fsgid) = fs_ids();
    if fsuid != user.uid || fsgid != user.gid {
        return Err(format!(
            "fsuid/fsgid are {fsuid}/{fsgid}, expected {}/{}",
            user.uid, user.gid
        ));
    }
    let mut have = thread_groups()?;
    have.sort_unstable();
    have.dedup();
    let mut want = user.groups.clone();
    want.sort_unstable();
    want.dedup();
    if have != want {
        return Err(format!("groups are {have:?}, expected {want:?}"));
    }
    let caps = capabilities()?;
    if caps.iter().any(|c| c.effective != 0 || c.permitted != 0) {
        return Err("capabilities are still held".into());
    }
    Ok(())
}

/// The calling thread's fsuid and fsgid (an invalid id changes nothing
/// and returns the current one).
fn fs_ids() -> (u32, u32) {
    let query = libc::c_long::from(libc::uid_t::MAX);
    // SAFETY: integer argument; with an invalid id this only reads.
    let uid = unsafe { libc::syscall(libc::SYS_setfsuid, query) };
    // SAFETY: as above.
    let gid = unsafe { libc::syscall(libc::SYS_setfsgid, query) };
    (
        u32::try_from(uid).unwrap_or(u32::MAX),
        u32::try_from(gid).unwrap_or(u32::MAX),
    )
}

/// The calling thread's supplementary groups.
fn thread_groups() -> Result<Vec<u32>, String> {
    let failed = || format!("getgroups: {}", io::Error::last_os_error());
    // SAFETY: a zero size only asks for the count.
    let count = unsafe {
        libc::syscall(
            libc::SYS_getgroups,
            0 as libc::c_long,
            std::ptr::null_mut::<libc::gid_t>(),
        )
    };
    let count = usize::try_from(count).map_err(|_| failed())?;
    let mut buf: Vec<libc::gid_t> = vec![0; count];
    // SAFETY: the buffer holds `count` gids (our own thread's groups cannot
    // change in between).
    let n = unsafe {
        libc::syscall(
            libc::SYS_getgroups,
            buf.len() as libc::c_long,
            buf.as_mut_ptr(),
        )
    };
    let n = usize::try_from(n).map_err(|_| failed())?;
    buf.truncate(n);
    Ok(buf)
}

fn capabilities() -> Result<[CapData; 2], String> {
    let mut hdr = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and two data words as the V3 ABI requires.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
    if r != 0 {
        return Err(format!("capget: {}", io::Error::last_os_error()));
    }
    Ok(data)
}

fn drop_capabilities() -> Result<(), String> {
    let mut hdr = CapHeader {
        version: CAP_V3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: as in `capabilities`; pid 0 is the calling thread.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) };
    if r != 0 {
        return Err(format!("capset: {}", io::Error::last_os_error()));
    }
    Ok(())
}

//! Unix accounts: who a job's owner is on this station.

use std::ffi::CString;
use std::path::PathBuf;

/// Why an account cannot be looked up.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    #[error("no Unix account {0:?} on this station")]
    NoSuchUser(String),
    #[error("no Unix account with uid {0} on this station")]
    NoSuchUid(u32),
    #[error("cannot look up the Unix account {what}: {source}")]
    Lookup {
        what: String,
        #[source]
        source: nix::Error,
    },
}

/// A local Unix account with everything needed to act as it: ids, every
/// group it belongs to (primary included), and its home directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnixUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// `getgrouplist(name, gid)`: the primary group and all supplementary
    /// ones, as a login would have them.
    pub groups: Vec<u32>,
    pub home: PathBuf,
}

impl UnixUser {
    /// The account called `name` (`getpwnam_r`, then `getgrouplist`).
    pub fn lookup(name: &str) -> Result<UnixUser, AccountError> {
        if name.is_empty() || name.contains('\0') {
            return Err(AccountError::NoSuchUser(name.to_string()));
        }
        let pw = nix::unistd::User::from_name(name)
            .map_err(|source| AccountError::Lookup {
                what: format!("{name:?}"),
                source,
            })?
            .ok_or_else(|| AccountError::NoSuchUser(name.to_string()))?;
        Self::from_passwd(pw)
    }

    /// The account with uid `uid` (`getpwuid_r`, then `getgrouplist`).
    pub fn from_uid(uid: u32) -> Result<UnixUser, AccountError> {
        let pw = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .map_err(|source| AccountError::Lookup {
                what: format!("uid {uid}"),
                source,
            })?
            .ok_or(AccountError::NoSuchUid(uid))?;
        Self::from_passwd(pw)
    }

    /// The account this process runs as (its effective uid).
    pub fn current() -> Result<UnixUser, AccountError> {
        Self::from_uid(nix::unistd::geteuid().as_raw())
    }

    fn from_passwd(pw: nix::unistd::User) -> Result<UnixUser, AccountError> {
        let lookup = |source| AccountError::Lookup {
            what: format!("{:?} (groups)", pw.name),
            source,
        };
        let cname = CString::new(pw.name.as_str()).map_err(|_| lookup(nix::Error::EINVAL))?;
        let mut groups: Vec<u32> = nix::unistd::getgrouplist(&cname, pw.gid)
            .map_err(lookup)?
            .into_iter()
            .map(|g| g.as_raw())
            .collect();
        groups.sort_unstable();
        groups.dedup();
        Ok(UnixUser {
            uid: pw.uid.as_raw(),
            gid: pw.gid.as_raw(),
            groups,
            home: pw.dir,
            name: pw.name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_by_name_and_uid() {
        let by_name = UnixUser::lookup("root").expect("root exists");
        assert_eq!(by_name.uid, 0);
        assert_eq!(by_name.gid, 0);
        assert!(by_name.groups.contains(&0));
        assert_eq!(UnixUser::from_uid(0).expect("uid 0"), by_name);
    }

    #[test]
    fn missing_accounts_are_named() {
        let e = UnixUser::lookup("no-such-gleaner-user").unwrap_err();
        assert_eq!(
            e.to_string(),
            "no Unix account \"no-such-gleaner-user\" on this station"
        );
        let e = UnixUser::lookup("bad\0name").unwrap_err();
        assert!(matches!(e, AccountError::NoSuchUser(_)));
        // Linux uids stop short of u32::MAX (it means "no uid").
        let e = UnixUser::from_uid(u32::MAX - 1).unwrap_err();
        assert!(e.to_string().contains("no Unix account with uid"), "{e}");
    }

    #[test]
    fn current_is_the_effective_uid() {
        let me = UnixUser::current().expect("own account");
        assert_eq!(me.uid, nix::unistd::geteuid().as_raw());
    }
}

//! The fair share's decayed usage (`home::share`), kept across restarts:
//! what each user and submitter used lately is the share's second key,
//! and a home that forgot it at every restart would let a heavy user
//! start level with everyone after each one.

use super::rows::{time_from, time_sql};
use super::{JobQueue, Result};
use gleaner_core::fair_share::SavedUsage;
use rusqlite::{TransactionBehavior, params};

/// The two levels of the share, as the table's `level` column names them.
const USERS: i64 = 0;
const SUBMITTERS: i64 = 1;

impl JobQueue {
    /// Replaces the saved usage with `users` and `submitters` (one
    /// transaction: a crash keeps the previous save whole).
    pub fn save_share_usage(&mut self, users: &SavedUsage, submitters: &SavedUsage) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM share_usage", [])?;
        {
            let mut put = tx.prepare_cached(
                "INSERT INTO share_usage (level, name, usage, at) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (level, saved) in [(USERS, users), (SUBMITTERS, submitters)] {
                let at = time_sql(saved.at)?;
                for (name, usage) in &saved.usage {
                    put.execute(params![level, name, usage, at])?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The usage last saved, by level (users, submitters); empty when
    /// nothing was.
    pub fn share_usage(&self) -> Result<(SavedUsage, SavedUsage)> {
        let mut read = self
            .conn
            .prepare_cached("SELECT level, name, usage, at FROM share_usage")?;
        let rows = read.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, f64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        let (mut users, mut submitters) = (SavedUsage::default(), SavedUsage::default());
        for row in rows {
            let (level, name, usage, at) = row?;
            let into = if level == USERS {
                &mut users
            } else {
                &mut submitters
            };
            into.at = into.at.max(time_from(at));
            into.usage.insert(name, usage);
        }
        Ok((users, submitters))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_core::time::Time;

    #[test]
    fn saved_usage_reads_back_and_a_new_save_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = JobQueue::open(dir.path().join("q.db")).unwrap();
        assert_eq!(q.share_usage().unwrap(), Default::default());
        let at = Time::from_secs(1_700_000_000);
        let saved = |pairs: &[(&str, f64)]| SavedUsage {
            at,
            usage: pairs.iter().map(|(n, u)| (n.to_string(), *u)).collect(),
        };
        let (u, s) = (
            saved(&[("ann", 3.5), ("bob", 0.25)]),
            saved(&[("g.ann", 3.5)]),
        );
        q.save_share_usage(&u, &s).unwrap();
        drop(q);
        let mut q = JobQueue::open(dir.path().join("q.db")).unwrap();
        assert_eq!(q.share_usage().unwrap(), (u, s));
        let (u, s) = (saved(&[("cy", 1.0)]), saved(&[]));
        q.save_share_usage(&u, &s).unwrap();
        assert_eq!(q.share_usage().unwrap(), (u, SavedUsage::default()));
    }
}

//! Output files sent home when the job exits: the named ones (a missing
//! one holds the job, as in HTCondor), or every new or changed top-level
//! file of the sandbox.

use super::config::{STDERR_FILE, STDOUT_FILE};
use super::jic::FetchError;
use super::run::GuestRun;
use super::sandbox::{Snapshot, local_name, open_output, snapshot};

impl GuestRun<'_> {
    /// Uploads the output files. `Err`: permanent (a missing or unsafe
    /// named file: the job is held) or transient (the home cannot take it
    /// now, e.g. its disk is full: the job goes back to its queue).
    pub(crate) async fn upload_outputs(&self, before: &Snapshot) -> Result<(), FetchError> {
        let explicit = self.req.description.transfer_output_files.is_some();
        for name in self.output_names(before).map_err(FetchError::Permanent)? {
            let Some(data) = self
                .read_output(&name, explicit)
                .map_err(FetchError::Permanent)?
            else {
                continue;
            };
            self.home.put_file(&name, data).await?;
        }
        Ok(())
    }

    /// The files to send: `transfer_output_files`, or what is new or
    /// changed since `before` (never the capture files).
    fn output_names(&self, before: &Snapshot) -> Result<Vec<String>, String> {
        Ok(match &self.req.description.transfer_output_files {
            Some(list) => {
                let mut v = Vec::new();
                for n in list {
                    v.push(local_name(n).map_err(|e| e.to_string())?);
                }
                v
            }
            None => snapshot(&self.sandbox)
                .into_iter()
                .filter(|(n, m)| n != STDOUT_FILE && n != STDERR_FILE && before.get(n) != Some(m))
                .map(|(n, _)| n)
                .collect(),
        })
    }

    /// One output file's contents; `None`: skipped (missing or unsafe,
    /// and not named by the job).
    fn read_output(&self, name: &str, explicit: bool) -> Result<Option<Vec<u8>>, String> {
        let path = self.sandbox.join(name);
        match open_output(&path) {
            Ok(Some(mut f)) => {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut buf)
                    .map_err(|e| format!("cannot read output {name:?}: {e}"))?;
                Ok(Some(buf))
            }
            Ok(None) if explicit => Err(format!("output file {name:?} was not created")),
            Ok(None) => Ok(None),
            Err(e) => {
                tracing::warn!(file = %name, error = %e, "output file skipped");
                if explicit {
                    return Err(format!("output file {name:?}: {e}"));
                }
                Ok(None)
            }
        }
    }
}

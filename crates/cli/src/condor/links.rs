//! The `condor_*` names as links to `glean`: `glean condor-links [DIR]`
//! for a user's own `~/bin` (links to this very binary), and for the
//! Debian package (`glean generate condor-links DIR`: relative links to
//! `glean` beside them in `/usr/bin`).

use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `glean condor-links [DIR]`.
#[derive(Args, Debug)]
pub struct LinksArgs {
    /// Where to put the links (default: ~/bin).
    pub dir: Option<PathBuf>,
    /// Replace files of these names that are not already links to glean.
    #[arg(long)]
    pub force: bool,
}

/// Makes a link `DIR/NAME → target` for every HTCondor command; a link
/// already pointing there is left alone, anything else of that name is
/// refused unless `force`. Returns the names linked.
pub fn make_links(dir: &Path, target: &Path, force: bool) -> anyhow::Result<Vec<&'static str>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut made = Vec::new();
    for name in super::TOOLS {
        let link = dir.join(name);
        match std::fs::read_link(&link) {
            Ok(t) if t == target => continue,
            Ok(_) | Err(_) if link.symlink_metadata().is_ok() => {
                if !force {
                    anyhow::bail!(
                        "{} exists and is not a link to {}: remove it, or pass --force",
                        link.display(),
                        target.display()
                    );
                }
                std::fs::remove_file(&link)
                    .with_context(|| format!("removing {}", link.display()))?;
            }
            _ => {}
        }
        std::os::unix::fs::symlink(target, &link)
            .with_context(|| format!("linking {} to {}", link.display(), target.display()))?;
        made.push(*name);
    }
    Ok(made)
}

pub fn links(args: LinksArgs) -> anyhow::Result<ExitCode> {
    let dir = match args.dir {
        Some(d) => d,
        None => {
            let home = std::env::var_os("HOME").context("HOME is not set; name the directory")?;
            PathBuf::from(home).join("bin")
        }
    };
    let exe = std::env::current_exe().context("cannot tell where glean is")?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let made = make_links(&dir, &exe, args.force)?;
    println!(
        "{} HTCondor command(s) linked to {} in {}",
        made.len(),
        exe.display(),
        dir.display()
    );
    let on_path =
        std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d == dir));
    if !on_path {
        eprintln!("note: {} is not on your PATH", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_every_command_once() {
        let d = tempfile::tempdir().unwrap();
        let made = make_links(d.path(), Path::new("glean"), false).unwrap();
        assert_eq!(made.len(), super::super::TOOLS.len());
        assert_eq!(
            std::fs::read_link(d.path().join("condor_q")).unwrap(),
            Path::new("glean")
        );
        // Again: nothing to do.
        assert!(
            make_links(d.path(), Path::new("glean"), false)
                .unwrap()
                .is_empty()
        );
        // Another file of that name is not replaced without --force.
        std::fs::remove_file(d.path().join("condor_rm")).unwrap();
        std::fs::write(d.path().join("condor_rm"), "#!/bin/sh\n").unwrap();
        assert!(make_links(d.path(), Path::new("glean"), false).is_err());
        assert_eq!(
            make_links(d.path(), Path::new("glean"), true).unwrap(),
            ["condor_rm"]
        );
    }
}

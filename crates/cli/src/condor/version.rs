//! `condor_version`: the two lines tools parse (`$CondorVersion: X.Y.Z …
//! $` and `$CondorPlatform: ARCH-OS_VERSION $`), `-arch`, `-opsys`.
//!
//! Gleaner reports the HTCondor release whose commands, options and
//! output it follows ([`HTCONDOR_VERSION`]); its own version is in the
//! PackageID, so a tool that checks for a minimum HTCondor version sees
//! the features it may use, and a person sees what runs.

use super::args::Usage;
use std::ffi::OsString;
use std::process::ExitCode;

/// The HTCondor release Gleaner's commands behave as.
pub const HTCONDOR_VERSION: &str = "25.0.0";

/// The date in the version line (that release's series).
const VERSION_DATE: &str = "2025-09-25";

/// `$CondorVersion: 25.0.0 2025-09-25 BuildID: Gleaner PackageID: gleaner-V $`.
pub fn version_line() -> String {
    format!(
        "$CondorVersion: {HTCONDOR_VERSION} {VERSION_DATE} BuildID: Gleaner PackageID: gleaner-{} $",
        env!("CARGO_PKG_VERSION")
    )
}

/// This machine's `Arch` as HTCondor names it (`X86_64`, `AARCH64`).
pub fn arch() -> String {
    match std::env::consts::ARCH {
        "x86_64" => "X86_64".into(),
        "aarch64" => "AARCH64".into(),
        other => other.to_uppercase(),
    }
}

/// `$CondorPlatform: X86_64-Debian_12 $`, from `/etc/os-release`.
pub fn platform_line() -> String {
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_string())
    };
    let name = field("NAME")
        .and_then(|n| n.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "Linux".into());
    let os = match field("VERSION_ID") {
        Some(v) => format!("{name}_{v}"),
        None => name,
    };
    // Only what a platform string may hold.
    let os: String = os
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .collect();
    format!("$CondorPlatform: {}-{os} $", arch())
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let (mut want_arch, mut want_opsys, mut opsys_first) = (false, false, false);
    for a in args {
        let a = a.to_string_lossy().into_owned();
        // HTCondor looks at the letter after the dash only.
        let letter = a.strip_prefix('-').and_then(|r| r.chars().next());
        match letter {
            Some('a') => want_arch = true,
            Some('o') => {
                want_opsys = true;
                opsys_first |= !want_arch;
            }
            Some('h') => {
                eprintln!("Usage: {tool} [-arch] [-opsys]");
                return Ok(ExitCode::SUCCESS);
            }
            _ if a.starts_with('-') => {
                return Err(Usage::new(format!("ERROR: unrecognized argument: '{a}'")).into());
            }
            _ => return Err(Usage::new(format!("ERROR: invalid argument: '{a}'")).into()),
        }
    }
    if opsys_first {
        println!("LINUX");
    }
    if want_arch {
        println!("{}", arch());
    }
    if want_opsys && !opsys_first {
        println!("LINUX");
    }
    if !want_arch && !want_opsys {
        println!("{}\n{}", version_line(), platform_line());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_tools_parse() {
        let v = version_line();
        assert!(v.starts_with("$CondorVersion: 25.0.0 "), "{v}");
        assert!(v.ends_with(" $"));
        let p = platform_line();
        assert!(
            p.starts_with("$CondorPlatform: ") && p.ends_with(" $"),
            "{p}"
        );
        assert!(!p.contains(char::is_control));
    }
}

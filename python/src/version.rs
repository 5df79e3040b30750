//! The version strings the API reports (`htcondor2.version()`,
//! `platform()`, `classad2.version()`): HTCondor's formats, so that tools
//! parsing `$CondorVersion: X.Y.Z …` find the HTCondor version whose
//! language and API this is, with Gleaner named as the build.

use gleaner_proto::submit::HTCONDOR_VERSION;

/// `X.Y.Z` of the HTCondor API provided.
pub fn htcondor_version() -> String {
    let (a, b, c) = HTCONDOR_VERSION;
    format!("{a}.{b}.{c}")
}

/// `$CondorVersion: 25.0.0 2025-01-01 BuildID: Gleaner-0.1.0 $`.
pub fn version_string() -> String {
    format!(
        "$CondorVersion: {} 2025-01-01 BuildID: Gleaner-{} $",
        htcondor_version(),
        env!("CARGO_PKG_VERSION")
    )
}

/// `$CondorPlatform: X86_64-Linux_Gleaner $`.
pub fn platform_string() -> String {
    format!(
        "$CondorPlatform: {}-{}_Gleaner $",
        std::env::consts::ARCH.to_ascii_uppercase(),
        if std::env::consts::OS == "linux" {
            "Linux"
        } else {
            std::env::consts::OS
        }
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_strings_parse_as_htcondors() {
        let v = super::version_string();
        let number = v
            .strip_prefix("$CondorVersion: ")
            .and_then(|r| r.split(' ').next())
            .unwrap();
        assert_eq!(number, super::htcondor_version());
        assert!(number.starts_with("25."));
        assert!(super::platform_string().starts_with("$CondorPlatform: "));
    }
}

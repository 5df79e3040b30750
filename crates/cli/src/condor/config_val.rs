//! `condor_config_val NAME…`: the configuration values tools ask HTCondor
//! for, answered from the Gleaner pool this user is in (`$GLEAN_HOME`):
//! where the schedd (the user's station) and the collector (the
//! coordinator) are, the local and spool directories, the host's names,
//! and the `condor_q` defaults Gleaner follows. One value a line; a name
//! Gleaner has no value for prints `Not defined: NAME` on standard error
//! and the command exits 1, as HTCondor's does. `-dump [PATTERN]` lists
//! every known name; `-v` adds where each value comes from.

use super::args::{Cursor, Usage, is_opt};
use std::ffi::OsString;
use std::process::ExitCode;

/// Every knob with its value, in name order.
fn knobs() -> Vec<(&'static str, String, &'static str)> {
    let home = gleaner_station::client::glean_home();
    let pool = gleaner_station::client::ClientSettings::discover(None, None).ok();
    let host = super::connect::hostname();
    let short = host.split('.').next().unwrap_or(&host).to_string();
    let exe = std::env::current_exe().ok();
    let bin = exe
        .as_deref()
        .and_then(std::path::Path::parent)
        .map(|p| p.display().to_string());
    let release = exe
        .as_deref()
        .and_then(std::path::Path::parent)
        .and_then(std::path::Path::parent)
        .map(|p| p.display().to_string());
    let station = pool.as_ref().map(|p| p.station.to_string());
    let coordinator = pool.as_ref().and_then(|p| p.coordinator.clone());
    let from_pool = "$GLEAN_HOME/pool.toml";
    let mut v: Vec<(&'static str, Option<String>, &'static str)> = vec![
        ("BIN", bin.clone(), "the glean binary's directory"),
        ("COLLECTOR_HOST", coordinator.clone(), from_pool),
        ("CONDOR_HOST", coordinator, from_pool),
        (
            "CONDOR_Q_DASH_BATCH_IS_DEFAULT",
            Some("true".into()),
            "Gleaner",
        ),
        ("CONDOR_Q_ONLY_MY_JOBS", Some("true".into()), "Gleaner"),
        ("CONDOR_Q_SHOW_OLD_SUMMARY", Some("false".into()), "Gleaner"),
        ("FILESYSTEM_DOMAIN", Some(host.clone()), "the host name"),
        ("FULL_HOSTNAME", Some(host.clone()), "the host name"),
        ("HOSTNAME", Some(short), "the host name"),
        ("LIBEXEC", bin, "the glean binary's directory"),
        ("LOCAL_DIR", Some(home.display().to_string()), "$GLEAN_HOME"),
        ("LOG", Some(home.display().to_string()), "$GLEAN_HOME"),
        ("OPSYS", Some("LINUX".into()), "Gleaner"),
        ("ARCH", Some(super::version::arch()), "Gleaner"),
        ("RELEASE_DIR", release, "the glean binary's prefix"),
        ("SCHEDD_HOST", station.clone(), from_pool),
        ("SCHEDD_NAME", station, from_pool),
        (
            "SPOOL",
            Some(home.join("spool").display().to_string()),
            "$GLEAN_HOME",
        ),
        (
            "SUBMIT_FACTORY_JOBS_BY_DEFAULT",
            Some("false".into()),
            "Gleaner",
        ),
        ("UID_DOMAIN", Some(host), "the host name"),
    ];
    v.sort_by_key(|(n, _, _)| *n);
    v.into_iter()
        .filter_map(|(n, val, at)| val.map(|val| (n, val, at)))
        .collect()
}

pub fn run(tool: &str, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let mut c = Cursor::new(tool, args)?;
    let (mut names, mut verbose, mut dump) = (Vec::new(), false, None::<String>);
    while let Some(a) = c.next() {
        if is_opt(&a, "verbose", 1) {
            verbose = true;
        } else if is_opt(&a, "dump", 1) {
            dump = Some(c.words().join(" "));
        } else if is_opt(&a, "version", 3) {
            println!(
                "{}\n{}",
                super::version::version_line(),
                super::version::platform_line()
            );
            return Ok(ExitCode::SUCCESS);
        } else if is_opt(&a, "config", 3) {
            println!("Configuration source:");
            println!(
                "\t{}",
                gleaner_station::client::glean_home()
                    .join("pool.toml")
                    .display()
            );
            return Ok(ExitCode::SUCCESS);
        } else if is_opt(&a, "name", 1) || is_opt(&a, "pool", 1) || is_opt(&a, "address", 1) {
            // Another daemon's configuration: Gleaner's tools answer for
            // this pool's, which every daemon shares.
            c.value(&a, false)?;
        } else if is_opt(&a, "schedd", 2)
            || is_opt(&a, "collector", 2)
            || is_opt(&a, "master", 2)
            || is_opt(&a, "startd", 3)
            || is_opt(&a, "negotiator", 2)
            || is_opt(&a, "raw", 2)
            || is_opt(&a, "expand", 2)
            || is_opt(&a, "evaluate", 2)
            || is_opt(&a, "default", 3)
        {
        } else if a.starts_with('-') {
            return Err(Usage::new(format!("{a} is not a valid argument")).into());
        } else {
            names.push(a);
        }
    }
    let knobs = knobs();
    if let Some(pattern) = dump {
        let pattern = pattern.to_ascii_uppercase();
        println!(
            "# Configuration from machine: {}",
            knobs
                .iter()
                .find(|k| k.0 == "FULL_HOSTNAME")
                .map_or("", |k| k.1.as_str())
        );
        if !pattern.is_empty() {
            println!("\n# Parameters with names that match {pattern}:");
        }
        for (n, v, at) in knobs.iter().filter(|k| k.0.contains(&pattern)) {
            println!("{n} = {}", crate::output::escape::term(v));
            if verbose {
                println!(" # at: {at}");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if names.is_empty() {
        return Err(Usage::new(format!("Usage: {tool} [-v] [-dump [PATTERN]] NAME…")).into());
    }
    let mut missing = 0;
    for n in &names {
        let up = n.to_ascii_uppercase();
        match knobs.iter().find(|k| k.0 == up) {
            Some((name, v, at)) => {
                let v = crate::output::escape::term(v);
                if verbose {
                    println!("{name} = {v}\n # at: {at}\n");
                } else {
                    println!("{v}");
                }
            }
            None => {
                crate::output::escape::emit_err(&format!("Not defined: {up}"));
                missing += 1;
            }
        }
    }
    Ok(if missing > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

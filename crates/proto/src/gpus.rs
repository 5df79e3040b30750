//! GPUs as HTCondor's machine ads describe them, and which of a machine's
//! GPUs a job may have.
//!
//! A machine with GPUs advertises (HTCondor's names): `GPUs` (those free
//! now), `TotalGPUs`, `DetectedGPUs` (`"GPU-c4a646d7, GPU-9dc7c6d6"`),
//! `AvailableGPUs` (a list naming the free ones' ads), one nested ad per
//! device, `GPUs_GPU_c4a646d7 = [ Id = "GPU-c4a646d7"; DeviceName = …;
//! Capability = 7.5; GlobalMemoryMb = 15102; … ]`, and the properties all
//! devices share once more as `GPUs_Capability`, `GPUs_DeviceName`, ….
//!
//! A job that asks for GPUs (`RequestGPUs`) fits where `GPUs >=
//! RequestGPUs`, or, with `RequireGPUs`, where that many of the free
//! devices satisfy it (`countMatches(MY.RequireGPUs,
//! TARGET.AvailableGPUs)`), as HTCondor's submit writes into a job's
//! requirements.

use gleaner_classad::{Ad, EvalContext, Expr, Value, quote_string};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One GPU device: its id (HTCondor's `GPU-` and the first 8 hex digits of
/// the device's UUID, or `CUDA0` by index) and the properties known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Gpu {
    pub id: String,
    pub device_name: Option<String>,
    /// CUDA compute capability (7.5).
    pub capability: Option<f64>,
    pub global_memory_mb: Option<u64>,
    /// The CUDA version the driver supports (12.2).
    pub driver_version: Option<f64>,
    /// The same as an integer, major × 1000 + minor × 10 (12020).
    pub max_supported_version: Option<u64>,
    pub ecc_enabled: Option<bool>,
}

impl Gpu {
    /// The device's properties as ClassAd attributes (name, expression).
    fn properties(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![("Id", quote_string(&self.id))];
        if let Some(v) = &self.device_name {
            p.push(("DeviceName", quote_string(v)));
        }
        if let Some(v) = self.capability {
            p.push(("Capability", real(v)));
        }
        if let Some(v) = self.global_memory_mb {
            p.push(("GlobalMemoryMb", v.to_string()));
        }
        if let Some(v) = self.driver_version {
            p.push(("DriverVersion", real(v)));
        }
        if let Some(v) = self.max_supported_version {
            p.push(("MaxSupportedVersion", v.to_string()));
        }
        if let Some(v) = self.ecc_enabled {
            p.push(("ECCEnabled", v.to_string()));
        }
        p
    }

    /// The name of the device's nested ad (`GPUs_GPU_c4a646d7`).
    pub fn ad_name(&self) -> String {
        let tag: String = self
            .id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("GPUs_{tag}")
    }
}

/// A real written so that it reads back as a real (`7.0`, not `7`).
fn real(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

/// The machine-ad attributes (name → expression) of the GPUs `all`, of
/// which those whose id is in `free` are not given to a guest.
pub fn machine_attrs(all: &[Gpu], free: &[&str]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if all.is_empty() {
        return out;
    }
    let available: Vec<&Gpu> = all
        .iter()
        .filter(|g| free.contains(&g.id.as_str()))
        .collect();
    out.insert("GPUs".into(), available.len().to_string());
    out.insert("TotalGPUs".into(), all.len().to_string());
    let ids: Vec<&str> = all.iter().map(|g| g.id.as_str()).collect();
    out.insert("DetectedGPUs".into(), quote_string(&ids.join(", ")));
    let names: Vec<String> = available.iter().map(|g| g.ad_name()).collect();
    out.insert(
        "AvailableGPUs".into(),
        format!("{{ {} }}", names.join(", ")),
    );
    for g in all {
        let body: Vec<String> = g
            .properties()
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        out.insert(g.ad_name(), format!("[ {} ]", body.join("; ")));
    }
    // What every device has alike, once more at the top (`GPUs_Capability`).
    let first = all[0].properties();
    for (k, v) in first {
        if k != "Id"
            && all
                .iter()
                .all(|g| g.properties().iter().any(|(k2, v2)| *k2 == k && *v2 == v))
        {
            out.insert(format!("GPUs_{k}"), v);
        }
    }
    out
}

/// `expr`, parsed once.
fn parsed(cell: &'static OnceLock<Option<Expr>>, text: &str) -> Option<&'static Expr> {
    cell.get_or_init(|| gleaner_classad::parse_expr(text).ok())
        .as_ref()
}

/// The free GPUs of `machine` that the job of `job_ad` may have: their ids,
/// in the machine's order (every free one when the job has no
/// `RequireGPUs`). Empty when the machine lists no devices.
pub fn usable(job_ad: &Ad, machine: &Ad, now_unix: i64) -> Vec<String> {
    static IDS: OnceLock<Option<Expr>> = OnceLock::new();
    static OK: OnceLock<Option<Expr>> = OnceLock::new();
    let ctx = EvalContext::new(now_unix)
        .with_my(job_ad)
        .with_target(machine);
    let Some(ids) = parsed(&IDS, "evalInEachContext(Id, TARGET.AvailableGPUs)") else {
        return Vec::new();
    };
    let Value::List(ids) = ctx.eval(ids) else {
        return Vec::new();
    };
    let ids: Vec<Option<String>> = ids
        .items()
        .iter()
        .map(|e| match e {
            Expr::Lit(gleaner_classad::Literal::Str(s)) => Some(s.clone()),
            _ => None,
        })
        .collect();
    let accepted: Vec<bool> = if job_ad.get("RequireGPUs").is_none() {
        vec![true; ids.len()]
    } else {
        let Some(ok) = parsed(
            &OK,
            "evalInEachContext(MY.RequireGPUs, TARGET.AvailableGPUs)",
        ) else {
            return Vec::new();
        };
        match ctx.eval(ok) {
            Value::List(l) => l
                .items()
                .iter()
                .map(|e| matches!(e, Expr::Lit(gleaner_classad::Literal::Bool(true))))
                .collect(),
            _ => return Vec::new(),
        }
    };
    ids.into_iter()
        .zip(accepted)
        .filter_map(|(id, ok)| id.filter(|_| ok))
        .collect()
}

/// How many GPUs of `machine` the job of `job_ad` may have, as HTCondor's
/// requirements count them: the machine's `GPUs`, or with `RequireGPUs`,
/// the free devices that satisfy it.
pub fn usable_count(job_ad: &Ad, machine: &Ad, now_unix: i64) -> u32 {
    if job_ad.get("RequireGPUs").is_some() {
        return u32::try_from(usable(job_ad, machine, now_unix).len()).unwrap_or(u32::MAX);
    }
    match EvalContext::new(now_unix)
        .with_my(machine)
        .eval_attr("GPUs")
    {
        Value::Int(n) => u32::try_from(n.max(0)).unwrap_or(u32::MAX),
        Value::Real(r) if r.is_finite() && r > 0.0 => r.trunc().min(f64::from(u32::MAX)) as u32,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(id: &str, cap: f64, mem: u64) -> Gpu {
        Gpu {
            id: id.into(),
            device_name: Some("Tesla T4".into()),
            capability: Some(cap),
            global_memory_mb: Some(mem),
            ..Default::default()
        }
    }

    fn machine(attrs: &BTreeMap<String, String>) -> Ad {
        let mut ad = Ad::new();
        for (k, v) in attrs {
            ad.insert(k, v).unwrap();
        }
        ad
    }

    #[test]
    fn machine_ads_name_devices_and_shared_properties() {
        let all = [
            gpu("GPU-aaaa1111", 7.5, 15102),
            gpu("GPU-bbbb2222", 8.0, 40536),
        ];
        let a = machine_attrs(&all, &["GPU-bbbb2222"]);
        assert_eq!(a["GPUs"], "1");
        assert_eq!(a["TotalGPUs"], "2");
        assert_eq!(a["DetectedGPUs"], "\"GPU-aaaa1111, GPU-bbbb2222\"");
        assert_eq!(a["AvailableGPUs"], "{ GPUs_GPU_bbbb2222 }");
        assert_eq!(
            a["GPUs_GPU_aaaa1111"],
            "[ Id = \"GPU-aaaa1111\"; DeviceName = \"Tesla T4\"; Capability = 7.5; GlobalMemoryMb = 15102 ]"
        );
        assert_eq!(a["GPUs_DeviceName"], "\"Tesla T4\"");
        assert!(!a.contains_key("GPUs_Capability"));
        assert!(machine_attrs(&[], &[]).is_empty());
    }

    #[test]
    fn require_gpus_picks_the_devices_that_satisfy_it() {
        let all = [
            gpu("GPU-aaaa1111", 7.5, 15102),
            gpu("GPU-bbbb2222", 8.0, 40536),
            gpu("GPU-cccc3333", 8.6, 24000),
        ];
        let m = machine(&machine_attrs(&all, &["GPU-aaaa1111", "GPU-bbbb2222"]));
        let mut job = Ad::new();
        job.insert_int("RequestGPUs", 1);
        assert_eq!(usable_count(&job, &m, 0), 2);
        assert_eq!(usable(&job, &m, 0), vec!["GPU-aaaa1111", "GPU-bbbb2222"]);
        job.insert(
            "RequireGPUs",
            "Capability >= GPUsMinCapability && GlobalMemoryMb >= 20000",
        )
        .unwrap();
        job.insert_real("GPUsMinCapability", 7.9);
        assert_eq!(usable(&job, &m, 0), vec!["GPU-bbbb2222"]);
        assert_eq!(usable_count(&job, &m, 0), 1);
        // No devices listed: none usable under a constraint, `GPUs` else.
        let mut plain = Ad::new();
        plain.insert_int("GPUs", 2);
        assert_eq!(usable_count(&job, &plain, 0), 0);
        job.remove("RequireGPUs");
        assert_eq!(usable_count(&job, &plain, 0), 2);
        assert_eq!(usable_count(&job, &Ad::new(), 0), 0);
    }
}

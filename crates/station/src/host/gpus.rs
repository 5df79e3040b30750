//! The host's GPUs: which devices it offers guests (`[gpus]`: listed, or
//! found with `nvidia-smi`, else as `/dev/nvidiaN` devices without their
//! properties), and what a guest given some of them is told
//! (`CUDA_VISIBLE_DEVICES`, `_CONDOR_AssignedGPUs`). The machine ad
//! describes them with HTCondor's attributes (`gleaner_proto::gpus`); the
//! starter gives each guest the devices its request and `require_gpus`
//! ask for (`starter/admission.rs`).

use gleaner_proto::gpus::Gpu;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `[gpus]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GpuConfig {
    /// Look for NVIDIA GPUs when none are listed (default true).
    pub detect: bool,
    /// The GPUs offered to guests, as `condor_gpu_discovery` describes them
    /// (`id`, `device_name`, `capability`, `global_memory_mb`,
    /// `driver_version`, `max_supported_version`, `ecc_enabled`); when
    /// given, nothing is detected.
    pub devices: Vec<Gpu>,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            detect: true,
            devices: Vec::new(),
        }
    }
}

impl GpuConfig {
    /// Ids present, unique, and usable as attribute name parts.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for g in &self.devices {
            let ok = !g.id.is_empty()
                && g.id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                return Err(format!(
                    "device id {:?} must be letters, digits, '-' and '_' (e.g. GPU-c4a646d7)",
                    g.id
                ));
            }
            if !seen.insert(g.id.to_ascii_lowercase()) {
                return Err(format!("device id {:?} is listed twice", g.id));
            }
        }
        Ok(())
    }

    /// The GPUs this host offers: the listed ones, else what detection
    /// finds (none when `detect = false`).
    pub fn devices(&self) -> Vec<Gpu> {
        if !self.devices.is_empty() || !self.detect {
            return self.devices.clone();
        }
        let found = nvidia_smi().unwrap_or_else(|| device_nodes(Path::new("/dev")));
        if !found.is_empty() {
            tracing::info!(gpus = found.len(), "GPUs found");
        }
        found
    }
}

/// How long `nvidia-smi` may take before detection gives up on it.
const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(5);

/// The GPUs `nvidia-smi` reports, or `None` when it is not there or fails.
fn nvidia_smi() -> Option<Vec<Gpu>> {
    let mut child = Command::new("nvidia-smi")
        .args([
            "--query-gpu=uuid,name,memory.total,compute_cap,driver_version",
            "--format=csv,noheader,nounits",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if start.elapsed() > NVIDIA_SMI_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                tracing::warn!("nvidia-smi did not answer in time: no GPUs detected");
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let mut out = String::new();
    use std::io::Read;
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    Some(parse_nvidia_smi(&out))
}

/// `nvidia-smi --query-gpu=uuid,name,memory.total,compute_cap,driver_version
/// --format=csv,noheader,nounits` read into devices named as HTCondor names
/// them (`GPU-` and the UUID's first 8 hex digits). The driver's CUDA
/// version is not in that output; `DriverVersion` is left out.
pub fn parse_nvidia_smi(out: &str) -> Vec<Gpu> {
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            let uuid = f.first().filter(|u| u.starts_with("GPU-"))?;
            let short: String = uuid["GPU-".len()..]
                .chars()
                .filter(|c| c.is_ascii_hexdigit())
                .take(8)
                .collect();
            Some(Gpu {
                id: format!("GPU-{short}"),
                device_name: f.get(1).filter(|s| !s.is_empty()).map(|s| s.to_string()),
                global_memory_mb: f.get(2).and_then(|s| s.parse().ok()),
                capability: f.get(3).and_then(|s| s.parse().ok()),
                ..Default::default()
            })
        })
        .collect()
}

/// NVIDIA device nodes `/dev/nvidiaN` as devices `CUDA0`, `CUDA1`, … (as
/// `condor_gpu_discovery -by-index` names them), without properties.
pub fn device_nodes(dev: &Path) -> Vec<Gpu> {
    let Ok(entries) = std::fs::read_dir(dev) else {
        return Vec::new();
    };
    let mut idx: Vec<u32> = entries
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("nvidia")?
                .parse::<u32>()
                .ok()
        })
        .collect();
    idx.sort_unstable();
    idx.into_iter()
        .map(|i| Gpu {
            id: format!("CUDA{i}"),
            ..Default::default()
        })
        .collect()
}

/// What `CUDA_VISIBLE_DEVICES` says for devices `ids`: a device found by
/// index by its index, one found by UUID by its id (CUDA takes both).
pub fn visible_devices(ids: &[String]) -> String {
    ids.iter()
        .map(|id| match id.strip_prefix("CUDA") {
            Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n.to_string(),
            _ => id.clone(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_output_becomes_htcondor_devices() {
        let out = "GPU-c4a646d7-1111-2222-3333-444455556666, Tesla T4, 15360, 7.5, 535.104.05\n\
                   GPU-9dc7c6d6-aaaa-bbbb-cccc-ddddeeeeffff, NVIDIA A100-SXM4-40GB, 40960, 8.0, 535.104.05\n\
                   garbage line\n";
        let g = parse_nvidia_smi(out);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].id, "GPU-c4a646d7");
        assert_eq!(g[0].device_name.as_deref(), Some("Tesla T4"));
        assert_eq!(g[0].global_memory_mb, Some(15360));
        assert_eq!(g[0].capability, Some(7.5));
        assert_eq!(g[1].capability, Some(8.0));
    }

    #[test]
    fn device_nodes_by_index_and_visible_devices() {
        let d = tempfile::tempdir().unwrap();
        for n in ["nvidia1", "nvidia0", "nvidiactl", "nvidia-uvm", "null"] {
            std::fs::write(d.path().join(n), "").unwrap();
        }
        let g = device_nodes(d.path());
        let ids: Vec<&str> = g.iter().map(|g| g.id.as_str()).collect();
        assert_eq!(ids, ["CUDA0", "CUDA1"]);
        assert_eq!(
            visible_devices(&["CUDA1".into(), "GPU-c4a646d7".into()]),
            "1,GPU-c4a646d7"
        );
        assert!(device_nodes(&d.path().join("none")).is_empty());
    }

    #[test]
    fn listed_devices_are_validated_and_win_over_detection() {
        let c: GpuConfig = toml::from_str(
            "detect = true\n[[devices]]\nid = \"GPU-a\"\ncapability = 8.6\n[[devices]]\nid = \"GPU-b\"\n",
        )
        .unwrap();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.devices().len(), 2);
        let twice = GpuConfig {
            detect: false,
            devices: vec![c.devices[0].clone(), c.devices[0].clone()],
        };
        assert!(twice.validate().unwrap_err().contains("twice"));
        let bad: Result<GpuConfig, _> = toml::from_str("[[devices]]\nid = \"x\"\nspeed = 3\n");
        assert!(bad.is_err(), "unknown keys are refused");
        assert!(
            GpuConfig {
                detect: false,
                devices: vec![]
            }
            .devices()
            .is_empty()
        );
    }
}

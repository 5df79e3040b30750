//! On battery → treat the station as owned (an optional extra: HTCondor has
//! no battery input, anchors.md §1.2; guests should not drain a laptop).

use super::OwnerError;
use std::path::Path;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PowerState {
    /// Some mains supply exists and none is online, or a battery reports
    /// `Discharging`.
    pub on_battery: bool,
    pub has_battery: bool,
}

/// Read `<sysfs>/class/power_supply/*/{type,online,status}`. A machine with
/// no power-supply class (a desktop, a VM) is not on battery.
pub fn read_power_state(sysfs: &Path) -> Result<PowerState, OwnerError> {
    let dir = sysfs.join("class").join("power_supply");
    let rd = match std::fs::read_dir(&dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(PowerState::default()),
        Err(e) => return Err(OwnerError::io(&dir, e)),
    };
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .ok()
    };
    let (mut mains, mut mains_online, mut has_battery, mut discharging) = (0, 0, false, false);
    for ent in rd.flatten() {
        let p = ent.path();
        match read(&p.join("type")).as_deref() {
            Some("Mains") => {
                mains += 1;
                if read(&p.join("online")).as_deref() == Some("1") {
                    mains_online += 1;
                }
            }
            Some("Battery") => {
                // Peripheral batteries (mice, headsets) have scope "Device";
                // they say nothing about the machine's power.
                if read(&p.join("scope")).as_deref() == Some("Device") {
                    continue;
                }
                has_battery = true;
                if read(&p.join("status")).as_deref() == Some("Discharging") {
                    discharging = true;
                }
            }
            _ => {}
        }
    }
    Ok(PowerState {
        on_battery: discharging || (has_battery && mains > 0 && mains_online == 0),
        has_battery,
    })
}

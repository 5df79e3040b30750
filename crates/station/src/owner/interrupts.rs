//! Keyboard/mouse interrupts from `/proc/interrupts`: HTCondor's
//! `km_idle_time` fallback (`idle_time.cpp`; platform.md §4), for machines
//! whose input devices can't be opened. Only PS/2 (`i8042`) lines are
//! reliable: USB input shares the xHCI interrupt with other devices, so do
//! not list `xhci` here. A change in the summed counts means activity at the
//! time of the reading, so precision is the sampling period.

use super::{IdleSource, OwnerError};
use std::path::PathBuf;
use std::time::SystemTime;

pub struct InterruptsSource {
    path: PathBuf,
    keywords: Vec<String>,
    prev: Option<u64>,
    started: SystemTime,
    last: Option<SystemTime>,
}

impl InterruptsSource {
    /// `<procfs>/interrupts`, lines naming `i8042`, `keyboard` or `mouse`.
    pub fn new(procfs: impl Into<PathBuf>) -> Self {
        InterruptsSource {
            path: procfs.into().join("interrupts"),
            keywords: ["i8042", "keyboard", "mouse"].map(String::from).to_vec(),
            prev: None,
            started: SystemTime::now(),
            last: None,
        }
    }

    pub fn with_keywords(mut self, keywords: Vec<String>) -> Self {
        self.keywords = keywords;
        self
    }
}

/// Sum of the per-CPU counts on lines whose description contains a keyword;
/// `None` if no line matches.
pub(crate) fn sum_matching(text: &str, keywords: &[String]) -> Option<u64> {
    let mut total = None;
    for line in text.lines().skip(1) {
        let Some((_irq, rest)) = line.split_once(':') else {
            continue;
        };
        if !keywords.iter().any(|k| rest.contains(k.as_str())) {
            continue;
        }
        let counts: u64 = rest
            .split_ascii_whitespace()
            .map_while(|f| f.parse::<u64>().ok())
            .sum();
        total = Some(total.unwrap_or(0) + counts);
    }
    total
}

impl IdleSource for InterruptsSource {
    fn name(&self) -> &str {
        "interrupts"
    }

    fn last_activity(&mut self, now: SystemTime) -> Result<Option<SystemTime>, OwnerError> {
        let text =
            std::fs::read_to_string(&self.path).map_err(|e| OwnerError::io(&self.path, e))?;
        let Some(sum) = sum_matching(&text, &self.keywords) else {
            return Ok(None); // no keyboard/mouse interrupt line: no information
        };
        if let Some(prev) = self.prev
            && prev != sum
        {
            self.last = Some(now);
        }
        self.prev = Some(sum);
        Ok(Some(self.last.unwrap_or(self.started)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_keyboard_lines() {
        let t = "           CPU0       CPU1\n  1:          9          2   IO-APIC   1-edge      i8042\n 12:        156          0   IO-APIC  12-edge      i8042\n 24:       5000       7000   PCI-MSI 65536-edge      virtio0-config\nNMI:          0          0   Non-maskable interrupts\n";
        let k = ["i8042".to_string()];
        assert_eq!(sum_matching(t, &k), Some(167));
        assert_eq!(sum_matching(t, &["mouse".to_string()]), None);
    }
}

//! The owner's controls as the starter applies them
//! (`host::owner_controls`): the eviction policy for guests placed from
//! now on, the schedule advertised in the policy, and the memory cap on
//! what the host offers. Running guests keep the ladder they started
//! with; the cap on their cgroup subtree is the host's to set.

use super::Starter;
use gleaner_core::eviction::EvictionPolicy;

/// What the owner overrode (`None`: the configuration's).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub policy: Option<EvictionPolicy>,
    pub windows: Option<Vec<String>>,
    pub memory_cap_mb: Option<u64>,
}

impl Starter {
    fn overrides(&self) -> std::sync::MutexGuard<'_, Overrides> {
        self.overrides
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets the owner's overrides (the host calls it on every change).
    pub fn set_overrides(&self, o: Overrides) {
        *self.overrides() = o;
    }

    /// The eviction policy for a guest placed now.
    pub fn policy(&self) -> EvictionPolicy {
        self.overrides().policy.unwrap_or(self.config.policy)
    }

    /// The operating windows advertised now.
    pub(super) fn windows(&self) -> Vec<String> {
        self.overrides()
            .windows
            .clone()
            .unwrap_or_else(|| self.config.guest_policy.windows.clone())
    }

    /// The memory the host offers guests in all, MiB.
    pub fn offered_memory_mb(&self) -> u64 {
        match self.overrides().memory_cap_mb {
            Some(cap) => cap.min(self.config.memory_mb),
            None => self.config.memory_mb,
        }
    }
}

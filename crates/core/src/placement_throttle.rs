//! The placement throttle: a home station places at most one job per
//! interval, because placing (or checkpointing) several jobs at once
//! "badly degrades" the owner's station and the network (Mutka 1988
//! seeds/000_14c1149197e96532.txt L839: one job every two minutes).

use crate::time::{Dur, Time};
use serde::{Deserialize, Serialize};

/// When the next placement may happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementThrottle {
    pub interval: Dur,
    last: Option<Time>,
}

impl PlacementThrottle {
    /// Mutka 1988 L839: two minutes.
    pub const MUTKA_1988: Dur = Dur::from_mins(2);

    pub fn new(interval: Dur) -> Self {
        PlacementThrottle {
            interval,
            last: None,
        }
    }
    /// The earliest instant a placement may start.
    pub fn next_allowed(&self) -> Time {
        self.last.map_or(Time::ZERO, |t| t + self.interval)
    }
    /// Places at `now` if allowed (recording it); otherwise says when.
    pub fn try_place(&mut self, now: Time) -> Result<(), Time> {
        let at = self.next_allowed();
        if now >= at {
            self.last = Some(now);
            Ok(())
        } else {
            Err(at)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_placement_per_interval() {
        let mut t = PlacementThrottle::new(PlacementThrottle::MUTKA_1988);
        assert_eq!(t.try_place(Time::from_secs(10)), Ok(()));
        assert_eq!(t.try_place(Time::from_secs(60)), Err(Time::from_secs(130)));
        assert_eq!(t.try_place(Time::from_secs(130)), Ok(()));
        let mut free = PlacementThrottle::new(Dur::ZERO);
        assert!(free.try_place(Time::ZERO).is_ok() && free.try_place(Time::ZERO).is_ok());
    }
}

//! `htcondor2.Collector`'s native half: the pool's ads from the
//! coordinator (`GET /v1/ads`, the user's token) and the user's own
//! station's schedd ad, which needs no coordinator.

use super::convert::new_classad;
use super::errors::HTCondorException;
use super::runtime::block_on;
use super::schedd::client_error;
use crate::collector::{self, Kind};
use gleaner_classad::parse_expr;
use gleaner_station::client::ClientSettings;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

#[pyclass(module = "htcondor2", name = "_Collector", frozen)]
pub struct NativeCollector {
    settings: Option<ClientSettings>,
    /// Why there are no settings (no pool.toml), for the error.
    problem: Option<String>,
    coordinator: Option<String>,
}

use crate::param::hostname;

impl NativeCollector {
    fn local_schedd(&self) -> Option<gleaner_classad::Ad> {
        self.settings
            .as_ref()
            .map(|s| collector::schedd_ad(&hostname(), &s.station.to_string()))
    }

    /// Every station's ad from the coordinator.
    fn stations(&self, py: Python<'_>) -> PyResult<Vec<gleaner_proto::wire::StationAd>> {
        let settings = self
            .settings
            .as_ref()
            .ok_or_else(|| HTCondorException::new_err(self.problem.clone().unwrap_or_default()))?;
        let url = self.coordinator.clone().ok_or_else(|| {
            HTCondorException::new_err(
                "no coordinator: set `coordinator` in $GLEAN_HOME/pool.toml or pass its URL to \
                 Collector()",
            )
        })?;
        let client = settings.coordinator_client(&url).map_err(client_error)?;
        let view: gleaner_coordinator_view::AdsView =
            block_on(py, async move { client.get_json("/v1/ads").await })?.map_err(client_error)?;
        Ok(view.stations.into_iter().map(|e| e.ad).collect())
    }

    fn ads(&self, py: Python<'_>, kind: Kind) -> PyResult<Vec<gleaner_classad::Ad>> {
        let needs_pool = matches!(kind, Kind::Startd | Kind::Master | Kind::Any);
        let stations = match self.stations(py) {
            Ok(s) => s,
            // The user's own schedd is known without the coordinator.
            Err(_) if kind == Kind::Schedd => {
                return Ok(self.local_schedd().into_iter().collect());
            }
            Err(e) if needs_pool => return Err(e),
            Err(_) => Vec::new(),
        };
        Ok(collector::pool_ads(
            kind,
            &stations,
            self.coordinator.as_deref(),
        ))
    }
}

/// What the coordinator's `/v1/ads` answers, read here without the
/// coordinator crate (only the station ads are used).
mod gleaner_coordinator_view {
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub struct AdsView {
        pub stations: Vec<AdEntry>,
    }

    #[derive(Deserialize)]
    pub struct AdEntry {
        pub ad: gleaner_proto::wire::StationAd,
    }
}

#[pymethods]
impl NativeCollector {
    /// The user's pool (`$GLEAN_HOME/pool.toml`, or `home`'s);
    /// `coordinator` replaces its coordinator URL.
    #[new]
    #[pyo3(signature = (coordinator = None, home = None))]
    fn new(coordinator: Option<String>, home: Option<&str>) -> Self {
        let found = match home {
            Some(h) => ClientSettings::discover_in(std::path::Path::new(h), None, None),
            None => ClientSettings::discover(None, None),
        };
        let (settings, problem) = match found {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let coordinator =
            coordinator.or_else(|| settings.as_ref().and_then(|s| s.coordinator.clone()));
        NativeCollector {
            settings,
            problem,
            coordinator,
        }
    }

    /// Ads of `ad_type` (an `htcondor2.AdType` number).
    #[pyo3(signature = (ad_type, constraint, projection))]
    fn query(
        &self,
        py: Python<'_>,
        ad_type: i64,
        constraint: Option<&str>,
        projection: Vec<String>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let constraint = match constraint.map(str::trim).filter(|c| !c.is_empty()) {
            None => None,
            Some(c) => Some(
                parse_expr(c)
                    .map_err(|e| PyValueError::new_err(format!("Invalid constraint {c:?}: {e}")))?,
            ),
        };
        let kind = Kind::from_ad_type(ad_type);
        if kind == Kind::None {
            return Ok(Vec::new());
        }
        let ads = self.ads(py, kind)?;
        collector::select(ads, constraint.as_ref(), &projection)
            .into_iter()
            .map(|a| new_classad(py, a))
            .collect()
    }

    /// The ads of daemons of `daemon_type` (an `htcondor2.DaemonType`
    /// number) named `name` (any name when None).
    #[pyo3(signature = (daemon_type, name = None))]
    fn locate_all(
        &self,
        py: Python<'_>,
        daemon_type: i64,
        name: Option<&str>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let kind = Kind::from_daemon_type(daemon_type);
        let local = self.local_schedd();
        let mut ads = match (kind, name) {
            // The default schedd is the user's own station.
            (Kind::Schedd, None) => local.into_iter().collect(),
            (Kind::None, _) => Vec::new(),
            _ => self.ads(py, kind)?,
        };
        if let Some(n) = name {
            ads.retain(|ad| {
                ["Name", "Machine"].iter().any(|a| {
                    matches!(ad.get(a), Some(gleaner_classad::Expr::Lit(gleaner_classad::Literal::Str(s))) if s == n)
                })
            });
            if ads.is_empty() && kind == Kind::Schedd && n == hostname() {
                ads.extend(self.local_schedd());
            }
        }
        ads.into_iter().map(|a| new_classad(py, a)).collect()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeCollector>()
}

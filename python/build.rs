//! Nothing to build: this script exists so that its `[build-dependencies]`
//! (Cargo.toml) pin the host's features of `syn` to what PyO3's macros
//! need, in every build of the workspace (see the feature pins there).
fn main() {}

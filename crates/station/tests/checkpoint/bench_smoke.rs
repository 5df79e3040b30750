//! The checkpoint bench at a small size: its own code, compiled into this
//! test, run as it is run by hand.

#[path = "../../../../bench/checkpoint/ckpt_bench.rs"]
#[allow(dead_code)]
mod bench;

#[test]
fn the_checkpoint_bench_runs_at_a_small_size() {
    let _serial = crate::common::serial_lock();
    let args: Vec<String> = [
        "--sizes",
        "6",
        "--no-leverage",
        "--levels",
        "1",
        "--level-mb",
        "2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Err(e) = bench::run(&args) {
        panic!("the checkpoint bench failed: {e}");
    }
}

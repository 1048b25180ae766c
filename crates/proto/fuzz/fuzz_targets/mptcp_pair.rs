#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/script.rs"]
mod script;
#[path = "../../tests/support/pair.rs"]
mod pair;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = pair::run(data, 4000) {
        panic!("invariant broken: {e}");
    }
});

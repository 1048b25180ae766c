//! What every registry entry says about itself, for `mplab plugins`, the
//! docs and the check that a table sets only the fields its kind takes
//! (`fields::Fields::finish`).

/// What the kernel backend does with an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnKernel {
    /// It runs it, this way (for `mplab plugins` and the docs).
    Runs(&'static str),
    /// It refuses scenarios that use it, for this reason.
    Refuses(&'static str),
}

/// What every registry entry says about itself.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// The `kind` (or `app`) value scenario files use.
    pub name: &'static str,
    /// The fields of its table that apply to it.
    pub params: &'static [&'static str],
    /// One line: what it models.
    pub what: &'static str,
    pub kernel: OnKernel,
}

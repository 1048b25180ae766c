//! mplab-sim (see crate docs)

//! mplab-proto (see crate docs)

//! mplab-emu (see crate docs)

//! `app = "bulk"`: the client writes as fast as the transport takes it,
//! `bytes` or until `stop` (iperf); the server reads.

use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};
use mplab_scenario::Size;

use super::{Application, EndState, Sends, StreamApp, EVERYWHERE};

#[derive(Debug, Clone, PartialEq)]
pub struct Bulk {
    bytes: Option<u64>,
}

impl Application for Bulk {
    const ABOUT: About = About { name: "bulk", params: &["bytes"], what: "send as fast as the transport allows, `bytes` or until `stop` (iperf)", kernel: EVERYWHERE };
    const SENDS: Sends = Sends::Client;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let bytes = f.get::<Size>("bytes")?;
        f.finish()?;
        Ok(Bulk { bytes: super::positive_or_until_stop(f, bytes)? })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("bytes", self.bytes.into())]
    }

    fn bounded(&self) -> Option<u64> {
        self.bytes
    }
}

impl StreamApp for Bulk {
    fn send_goal(&self, end: &EndState) -> Option<u64> {
        if end.client { self.bytes } else { Some(0) }
    }

    fn recv_goal(&self, end: &EndState) -> Option<u64> {
        if end.client { None } else { self.bytes }
    }
}

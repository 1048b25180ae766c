//! `app = "download"`: the server (`to`) sends `bytes` to the client
//! (`from`), which reads them; the result is the completion time (wget).

use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, Resolved};
use mplab_scenario::Size;

use super::{Application, EndState, Sends, StreamApp, EVERYWHERE};

#[derive(Debug, Clone, PartialEq)]
pub struct Download {
    bytes: u64,
}

impl Application for Download {
    const ABOUT: About = About { name: "download", params: &["bytes"], what: "`to` sends `bytes` back to `from`; the result is the completion time (wget)", kernel: EVERYWHERE };
    const SENDS: Sends = Sends::Server;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let bytes = f.get::<Size>("bytes")?;
        f.finish()?;
        Ok(Download { bytes: super::need(f, bytes, "bytes")? })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("bytes", self.bytes.into())]
    }

    fn bounded(&self) -> Option<u64> {
        Some(self.bytes)
    }
}

impl StreamApp for Download {
    fn send_goal(&self, end: &EndState) -> Option<u64> {
        if end.client { Some(0) } else { Some(self.bytes) }
    }

    fn recv_goal(&self, end: &EndState) -> Option<u64> {
        end.client.then_some(self.bytes)
    }
}

//! One end of a flow's application: the state every application keeps
//! (bytes written and read, completion, the stop time) and the runner the
//! host stack calls, which leaves what to write and when to close to the
//! application's [`StreamApp`].

use core::ops::{Deref, DerefMut};
use core::time::Duration;

use mplab_proto::Instant;

use super::{Kind, Receiver, StreamSocket};

/// What every application end keeps, whatever it does.
#[derive(Debug, Clone)]
pub struct EndState {
    /// True on the end that opened the connection (scenario `from`).
    pub client: bool,
    pub stop_at: Option<Instant>,
    /// Bytes handed to the socket.
    pub sent: u64,
    pub rx: Receiver,
    /// Request/response exchanges completed, and their latencies.
    pub requests_done: u64,
    pub latencies: Vec<Duration>,
    /// When a bounded transfer's last byte reached this end.
    pub completed_at: Option<Instant>,
    closed: bool,
}

impl EndState {
    pub fn stopped(&self, now: Instant) -> bool {
        self.stop_at.is_some_and(|t| now >= t)
    }

    /// Bytes this end may still hand to the socket now, towards `goal`.
    pub fn room(&self, goal: Option<u64>, s: &dyn StreamSocket) -> u64 {
        let left = goal.map(|g| g.saturating_sub(self.sent)).unwrap_or(u64::MAX);
        left.min(s.send_space())
    }
}

/// The application on one end of a flow.
#[derive(Debug, Clone)]
pub struct App {
    pub kind: Kind,
    state: EndState,
}

impl Deref for App {
    type Target = EndState;
    fn deref(&self) -> &EndState {
        &self.state
    }
}

impl DerefMut for App {
    fn deref_mut(&mut self) -> &mut EndState {
        &mut self.state
    }
}

impl App {
    pub fn new(kind: Kind, client: bool, stop_at: Option<Instant>) -> App {
        App { kind, state: EndState { client, stop_at, sent: 0, rx: Receiver::default(), requests_done: 0, latencies: Vec::new(), completed_at: None, closed: false } }
    }

    /// Called when the connection is established.
    pub fn on_connected(&mut self, now: Instant, s: &mut dyn StreamSocket) {
        self.kind.app_mut().on_connected(&mut self.state, now);
        self.pump(now, s);
    }

    /// Called whenever the socket may accept more data or has data to read.
    pub fn pump(&mut self, now: Instant, s: &mut dyn StreamSocket) {
        let got = self.state.rx.drain(s);
        let app = self.kind.app_mut();
        app.on_read(&mut self.state, now, got);
        // A bounded transfer completes when its last byte reaches the receiver.
        if self.state.completed_at.is_none() && app.recv_goal(&self.state).is_some_and(|g| self.state.rx.delivered >= g) {
            self.state.completed_at = Some(now);
        }
        if self.state.closed {
            return;
        }
        app.write(&mut self.state, now, s);
        if app.closes(&self.state, now, s) {
            s.close();
            self.state.closed = true;
        }
    }

    /// The application's own timer, if any. A closed end has nothing to
    /// time; one that only receives waits for its peer, not for the clock.
    pub fn poll_timer(&self) -> Option<Instant> {
        let app = self.kind.app();
        if self.state.closed || app.send_goal(&self.state) == Some(0) {
            return None;
        }
        app.timer(&self.state)
    }

    pub fn is_closed(&self) -> bool {
        self.state.closed
    }
}

//! The adversarial matrix's catalogue: every attack an `attacker`
//! middlebox can mount on an MPTCP connection, what the attacker knows
//! (on the path: it sees every segment on its link; off the path: only the
//! initial subflow's addresses and ports, as RFC 7430's blind attacker who
//! guessed the four-tuple), and what RFC 8684 / RFC 7430 require of the
//! victim. The forging itself is `mplab_backend::attack`, shared by the
//! simulator and the link emulator.

use serde::Serialize;

/// What the attacker can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// Sees every segment on its link, both ways, and can change them.
    OnPath,
    /// Sees nothing; knows the initial subflow's four-tuple.
    OffPath,
}

impl Position {
    pub fn name(self) -> &'static str {
        match self {
            Position::OnPath => "on path",
            Position::OffPath => "off path",
        }
    }
}

/// A protocol moment an attacker can strike at, as it first sees it on
/// its link: the strike is then tied to the connection's life rather than
/// to the clock, and an attacker on a link the moment never crosses does
/// not strike at all (the row is "not mounted").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Moment {
    /// The first SYN with MP_CAPABLE: during the initial handshake.
    MpCapable,
    /// The first SYN with MP_JOIN: during the first join's handshake.
    MpJoin,
    /// The first ADD_ADDR (not an echo): right after an announcement.
    AddAddr,
    /// The first DSS carrying a DATA_FIN: at the end of a direction.
    DataFin,
}

impl Moment {
    pub const ALL: &'static [Moment] = &[Moment::MpCapable, Moment::MpJoin, Moment::AddAddr, Moment::DataFin];

    pub fn name(self) -> &'static str {
        match self {
            Moment::MpCapable => "mp-capable",
            Moment::MpJoin => "mp-join",
            Moment::AddAddr => "add-addr",
            Moment::DataFin => "data-fin",
        }
    }

    pub fn from_name(s: &str) -> Option<Moment> {
        Moment::ALL.iter().copied().find(|m| m.name() == s)
    }

    /// Every name, for error messages.
    pub fn names() -> String {
        Moment::ALL.iter().map(|m| format!("{:?}", m.name())).collect::<Vec<_>>().join(", ")
    }
}

/// One attacker as a scenario mounts it: the attack, when it strikes
/// (`at_ns` after the run's start, or after `after` is first seen on its
/// link) and how many forged or changed segments where the attack repeats
/// (None: the attack's default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mount {
    pub attack: AttackKind,
    pub at_ns: u64,
    pub after: Option<Moment>,
    pub count: Option<u32>,
}

/// What the RFCs allow the victim to do: the verdict of a row compares the
/// measured outcome with this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// The forgery changes nothing: the connection keeps every subflow and
    /// delivers every byte.
    Ignored,
    /// The forged subflow is refused (RST) and never carries data.
    Refused,
    /// The attacked subflow may be closed or the connection may fall back,
    /// but every byte still arrives, unchanged.
    Survives,
}

impl Expect {
    pub fn name(self) -> &'static str {
        match self {
            Expect::Ignored => "ignored",
            Expect::Refused => "refused",
            Expect::Survives => "survives",
        }
    }
}

macro_rules! kinds {
    ($( $v:ident = $name:literal, $pos:ident, $expect:ident, $rfc:literal; )*) => {
        /// One row of the matrix.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        pub enum AttackKind { $($v,)* }

        impl AttackKind {
            pub const ALL: &'static [AttackKind] = &[$(AttackKind::$v,)*];
            pub fn name(self) -> &'static str {
                match self { $(AttackKind::$v => $name,)* }
            }
            pub fn position(self) -> Position {
                match self { $(AttackKind::$v => Position::$pos,)* }
            }
            pub fn expect(self) -> Expect {
                match self { $(AttackKind::$v => Expect::$expect,)* }
            }
            /// What the RFCs require of the victim, in one line.
            pub fn requirement(self) -> &'static str {
                match self { $(AttackKind::$v => $rfc,)* }
            }
        }
    };
}

kinds! {
    JoinUnknownToken = "join-unknown-token", OffPath, Refused,
        "RFC 8684 3.2: an MP_JOIN SYN whose token matches no connection is answered with a RST";
    JoinStolenToken = "join-stolen-token", OnPath, Refused,
        "RFC 8684 3.2, 5.1: the token finds the connection, but the third ACK's HMAC (both keys) fails: the subflow is reset and carries nothing";
    JoinReplayedHmac = "join-replayed-hmac", OnPath, Refused,
        "RFC 8684 3.2: a replayed MP_JOIN SYN gets a fresh nonce from the responder, so the replayed third-ACK HMAC fails: RST";
    JoinSynFlood = "join-syn-flood", OffPath, Refused,
        "RFC 8684 3.2, 5: each MP_JOIN SYN with an unknown token gets a RST and leaves no state; the genuine connection is untouched";
    AddAddrBadHmac = "add-addr-bad-hmac", OnPath, Ignored,
        "RFC 8684 3.4.1: an ADD_ADDR whose HMAC fails is silently dropped; no subflow to the announced address";
    AddAddrReplayed = "add-addr-replayed", OnPath, Ignored,
        "RFC 8684 3.4.1: the HMAC covers the address, so a genuine ADD_ADDR's HMAC on another address fails: dropped";
    RemoveAddrOffPath = "remove-addr-off-path", OffPath, Ignored,
        "RFC 7430 3, RFC 9293 3.10.7.4: a segment outside the receive window is answered with an ACK and its options are not acted on";
    MpPrioOffPath = "mp-prio-off-path", OffPath, Ignored,
        "RFC 7430 3: an out-of-window MP_PRIO cannot change a subflow's priority";
    FastcloseWrongKey = "fastclose-wrong-key", OnPath, Ignored,
        "RFC 8684 3.5: MP_FASTCLOSE must carry the receiver's key; with another key it is ignored";
    MpFailOffPath = "mp-fail-off-path", OffPath, Ignored,
        "RFC 7430 3, RFC 8684 3.7: an out-of-window MP_FAIL does not make the connection fall back";
    InfiniteMapping = "infinite-mapping", OnPath, Survives,
        "RFC 8684 3.7: an infinite mapping is only valid on the last subflow after MP_FAIL or at fallback; an on-path attacker can force a fallback, never lose or change a byte";
    DssOverlap = "dss-overlap", OnPath, Survives,
        "RFC 8684 3.3: data already received at the data level is dropped; a mapping that disagrees with an earlier one may reset the subflow; no changed byte reaches the application";
    DssOutOfWindow = "dss-out-of-window", OnPath, Survives,
        "RFC 8684 3.3.5: data outside the data-level receive window is dropped";
    DssBadChecksum = "dss-bad-checksum", OnPath, Survives,
        "RFC 8684 3.3.1, 3.7: a failed DSS checksum resets the subflow (MP_TCPRST) or makes the last subflow fall back with MP_FAIL; the bad bytes are never delivered";
    RstOffPath = "rst-off-path", OffPath, Ignored,
        "RFC 5961 3, RFC 9293: a RST whose sequence number is not exactly RCV.NXT does not close the subflow (challenge ACK or drop)";
    RstOnPath = "rst-on-path", OnPath, Survives,
        "RFC 8684 3.3.6: a reset subflow's unacknowledged data goes again on the others; the connection goes on";
    StripMidConnection = "strip-mid-connection", OnPath, Survives,
        "RFC 8684 3.7: MPTCP options disappearing mid-connection reset that subflow (others remain) or make the only one fall back; no data is lost";
    PayloadRewrite = "payload-rewrite", OnPath, Survives,
        "RFC 8684 3.3.1: with DSS checksums a rewritten payload is detected (MP_FAIL, subflow reset or fallback) and never delivered";
    SegmentSplit = "segment-split", OnPath, Survives,
        "RFC 8684 3.3: a mapping covers segments a middlebox split; every byte arrives";
    NatRebinding = "nat-rebinding", OnPath, Survives,
        "RFC 8684 3.2, 3.3.6: after a NAT rebinds a subflow's port the server resets the unknown four-tuple; the connection goes on over the other subflows";
}

impl AttackKind {
    /// Where RFC 8684 5 leaves the row to TCP's strength: the condition
    /// under which the victim may do no better than TCP would.
    pub fn tcp_limit(self) -> Option<&'static str> {
        Some(match self {
            AttackKind::RstOnPath => "an on-path RST of the connection's only subflow ends it, as it ends a TCP connection (RFC 8684 5); no changed byte is delivered",
            AttackKind::NatRebinding => "a NAT that rebinds the connection's only subflow ends it, as it ends a TCP connection (RFC 8684 5); no changed byte is delivered",
            AttackKind::PayloadRewrite => "the first rewrite on the only subflow fails its DSS checksum and the connection falls back (RFC 8684 3.7); the rewrites after the fallback are TCP's to miss",
            _ => return None,
        })
    }

    pub fn from_name(s: &str) -> Option<AttackKind> {
        AttackKind::ALL.iter().copied().find(|k| k.name() == s)
    }

    /// Every name, for error messages.
    pub fn names() -> String {
        AttackKind::ALL.iter().map(|k| format!("{:?}", k.name())).collect::<Vec<_>>().join(", ")
    }
}

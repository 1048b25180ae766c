//! Stack profiles: `profile` of every host in `[transport.mptcp]`, per host
//! in `profiles`, per flow; the flow's wins over the host's, the host's over
//! every host's.

mod common;

use common::{error, net};
use mplab_scenario::network::StackProfile::{Linux, Mplab};

fn scenario(mptcp: &str, flows: &str) -> String {
    format!(
        "name = \"p\"\nduration = \"1s\"\n[topology]\nkind = \"dumbbell\"\npairs = 2\naccess_rate = \"10Mbit\"\nbottleneck_rate = \"10Mbit\"\n[transport.mptcp]\n{mptcp}\n{flows}"
    )
}

const TWO_FLOWS: &str = "[[flows]]\nfrom = \"l0\"\nto = \"r0\"\ntransport = \"mptcp\"\n[[flows]]\nfrom = \"l1\"\nto = \"r1\"\ntransport = \"mptcp\"\nprofile = \"mplab\"\n";

#[test]
fn default_is_mplab_everywhere() {
    let n = net(&scenario("", TWO_FLOWS));
    assert_eq!(n.flows[0].mptcp.as_ref().unwrap().profiles, [Mplab, Mplab]);
}

#[test]
fn flow_over_host_over_every_host() {
    let n = net(&scenario("profile = \"linux\"\nprofiles = { r0 = \"mplab\", l1 = \"mplab\" }", TWO_FLOWS));
    // Flow 0: l0 takes every host's (linux), r0 its own (mplab).
    assert_eq!(n.flows[0].mptcp.as_ref().unwrap().profiles, [Linux, Mplab]);
    // Flow 1 says mplab for both ends.
    assert_eq!(n.flows[1].mptcp.as_ref().unwrap().profiles, [Mplab, Mplab]);
    let n = net(&scenario("profiles = { r1 = \"linux\" }", TWO_FLOWS.replace("profile = \"mplab\"", "").as_str()));
    assert_eq!(n.flows[1].mptcp.as_ref().unwrap().profiles, [Mplab, Linux]);
}

#[test]
fn bad_profiles_name_their_field() {
    assert_eq!(
        error(&scenario("profile = \"freebsd\"", TWO_FLOWS)),
        "scenario.toml:9:11: transport.mptcp.profile: unknown variant `freebsd`, expected `mplab` or `linux`"
    );
    assert_eq!(error(&scenario("profiles = { x9 = \"linux\" }", TWO_FLOWS)), "scenario.toml:9:19: transport.mptcp.profiles.x9: unknown node \"x9\"");
    assert!(error(&scenario("profiles = { left = \"linux\" }", TWO_FLOWS)).contains("\"left\" is a router"));
    assert_eq!(
        error(&scenario("profile = \"linux\"\nopportunistic_retransmit = true", TWO_FLOWS)),
        "scenario.toml:10:28: transport.mptcp.opportunistic_retransmit: Linux has no opportunistic retransmission or penalisation; profile = \"linux\" runs without them"
    );
    let udp = "[[flows]]\nfrom = \"l0\"\nto = \"r0\"\ntransport = \"udp\"\napp = \"voip\"\nprofile = \"linux\"\n";
    assert!(error(&scenario("", udp)).ends_with("flows[0].profile: only applies to transport = \"mptcp\" or \"tcp\""), "{}", error(&scenario("", udp)));
}

/// A plain TCP flow takes its ends' profiles the same way (the `linux`
/// profile's TCP behaviour is not MPTCP's alone), and may set its own.
#[test]
fn tcp_flows_take_their_hosts_profiles() {
    let tcp = "[[flows]]\nfrom = \"l0\"\nto = \"r0\"\ntransport = \"tcp\"\n[[flows]]\nfrom = \"l1\"\nto = \"r1\"\ntransport = \"tcp\"\nprofile = \"mplab\"\n";
    let n = net(&scenario("profile = \"linux\"\nprofiles = { r0 = \"mplab\" }", tcp));
    assert_eq!(n.flows[0].tcp.profiles, [Linux, Mplab]);
    assert_eq!(n.flows[1].tcp.profiles, [Mplab, Mplab]);
    assert!(n.flows[0].mptcp.is_none());
    let n = net(&scenario("", tcp));
    assert_eq!(n.flows[0].tcp.profiles, [Mplab, Mplab]);
}

use super::*;
use std::net::Ipv4Addr;

fn ip(a: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, a, 1))
}
fn sa(a: u8, p: u16) -> SocketAddr {
    SocketAddr::new(ip(a), p)
}

#[test]
fn fullmesh_pairs_every_local_with_every_remote() {
    let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2))];
    let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
    let subflows = [(sa(1, 1000), sa(9, 80))];
    let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 8, add_addr_accepted: 8 }, id_order: false, closing: false };
    let mut out = vec![];
    FullMesh.on_established(&v, &mut out);
    assert_eq!(out, vec![PmAction::Open { local: ip(2), remote: remotes[0], backup: false }]);
    let mut out = vec![];
    FullMesh.on_add_addr(&v, RemoteAddr { id: 1, addr: sa(8, 80) }, &mut out);
    assert_eq!(out.len(), 2, "both locals to the new address");
}

#[test]
fn limits_cap_extra_subflows() {
    let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2)), LocalAddr::plain(2, ip(3))];
    let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
    let subflows = [(sa(1, 1000), sa(9, 80))];
    let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 1, add_addr_accepted: 0 }, id_order: false, closing: false };
    let mut out = vec![];
    FullMesh.on_established(&v, &mut out);
    assert_eq!(out.len(), 1);
}

#[test]
fn a_capped_mesh_spreads_over_unused_interfaces_first() {
    // Two interfaces, room for one more subflow, the peer's second
    // address announced before anything else was opened: the subflow
    // goes from the interface without one, not from the busy one.
    let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2))];
    let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
    let subflows = [(sa(1, 1000), sa(9, 80))];
    let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 1, add_addr_accepted: 1 }, id_order: false, closing: false };
    let mut out = vec![];
    let announced = RemoteAddr { id: 1, addr: sa(8, 80) };
    FullMesh.on_add_addr(&v, announced, &mut out);
    assert_eq!(out, vec![PmAction::Open { local: ip(2), remote: announced, backup: false }]);
    // Linux walks its endpoints in id order: the busy interface first.
    let v = PmView { id_order: true, ..v };
    let mut out = vec![];
    FullMesh.on_add_addr(&v, announced, &mut out);
    assert_eq!(out, vec![PmAction::Open { local: ip(1), remote: announced, backup: false }]);
}

/// An announced address is joined from every local address in id
/// order under `id_order`: the subflow list the kernel builds for two
/// interfaces (initial, then 1 -> announced, 2 -> announced; the
/// kernel's subflow ids on the `two-paths` scenario).
#[test]
fn id_order_joins_an_announced_address_from_the_first_interface_first() {
    let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2))];
    let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
    let subflows = [(sa(1, 1000), sa(9, 80))];
    let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 8, add_addr_accepted: 8 }, id_order: true, closing: false };
    let announced = RemoteAddr { id: 1, addr: sa(8, 80) };
    let mut out = vec![];
    FullMesh.on_add_addr(&v, announced, &mut out);
    let from: Vec<IpAddr> = out.iter().map(|a| match a { PmAction::Open { local, .. } => *local, _ => unreachable!() }).collect();
    assert_eq!(from, vec![ip(1), ip(2)]);
    let mut out = vec![];
    FullMesh.on_add_addr(&PmView { id_order: false, ..v }, announced, &mut out);
    assert!(matches!(out[0], PmAction::Open { local, .. } if local == ip(2)), "mplab: the unused interface first");
}

#[test]
fn ndiffports_opens_n_minus_one_more() {
    let locals = [LocalAddr::plain(0, ip(1))];
    let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
    let subflows = [(sa(1, 1000), sa(9, 80))];
    let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 8, add_addr_accepted: 0 }, id_order: false, closing: false };
    let mut out = vec![];
    NDiffPorts { n: 4 }.on_established(&v, &mut out);
    assert_eq!(out.len(), 3);
}

#[test]
fn default_joins_an_announced_address_within_limits() {
    let locals = [LocalAddr::plain(0, ip(1))];
    let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
    let subflows = [(sa(1, 1000), sa(9, 80))];
    let mut v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 2, add_addr_accepted: 2 }, id_order: false, closing: false };
    let mut out = vec![];
    Endpoints.on_add_addr(&v, RemoteAddr { id: 1, addr: sa(8, 80) }, &mut out);
    assert_eq!(out.len(), 1);
    v.limits.subflows = 0;
    let mut out = vec![];
    Endpoints.on_add_addr(&v, RemoteAddr { id: 1, addr: sa(8, 80) }, &mut out);
    assert!(out.is_empty());
}

/// Every manager's facts are its entry's: limits from the addresses and
/// `subflows`, `subflows` as ndiffports' count, what the kernel configures.
#[test]
fn entries_carry_their_limits_and_kernel_setup() {
    let a = AddrCounts { local: 2, remote: 2 };
    let e = |n: &str| entry(n).unwrap_or_else(|| panic!("{n}"));
    assert_eq!((e("default").limits)(a, None), Limits::LINUX_DEFAULT);
    assert_eq!((e("endpoints").limits)(a, Some(4)), Limits { subflows: 3, add_addr_accepted: 0 });
    assert_eq!((e("fullmesh").limits)(a, None), Limits { subflows: 3, add_addr_accepted: 1 });
    assert_eq!((e("ndiffports:5").limits)(a, Some(5)), Limits { subflows: 4, add_addr_accepted: 0 });
    assert_eq!(e("ndiffports").subflows_param, Some(2));
    assert_eq!(e("endpoints").kernel_endpoints, KernelEndpoints::Scenario);
    assert!(matches!(e("fullmesh").kernel_endpoints, KernelEndpoints::EveryAddress { .. }));
    assert!(lookup("fixture-first-only").is_ok(), "the test fixture is registered by its one line");
    assert!(lookup("fullmess").unwrap_err().contains("unknown path manager"));
}

/// Linux 6.18's `laminar` endpoints (pm_kernel.c, fill_local_laminar_endp):
/// each announced address gets one subflow from the first laminar
/// endpoint no subflow uses yet; once every laminar endpoint is used the
/// next announced address gets none (routing's choice is not asked); a
/// laminar endpoint on the initial address is never available but still
/// turns the mode on.
#[test]
fn laminar_endpoints_are_used_once_per_announced_address() {
    let laminar = |id, a| LocalAddr { laminar: true, ..LocalAddr::plain(id, ip(a)) };
    let locals = [LocalAddr::plain(0, ip(1)), laminar(1, 2), laminar(2, 3)];
    let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
    let lim = Limits { subflows: 8, add_addr_accepted: 8 };
    let (b, c, d) = (RemoteAddr { id: 1, addr: sa(8, 80) }, RemoteAddr { id: 2, addr: sa(7, 80) }, RemoteAddr { id: 3, addr: sa(6, 80) });
    let open = |local: IpAddr, remote: RemoteAddr| PmAction::Open { local, remote, backup: false };
    let subflows = vec![(sa(1, 1000), sa(9, 80))];
    let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: lim, id_order: true, closing: false };
    let mut out = vec![];
    Endpoints.on_add_addr(&v, b, &mut out);
    assert_eq!(out, vec![open(ip(2), b)], "C(b) - S(b), not the initial address");
    let subflows = vec![(sa(1, 1000), sa(9, 80)), (sa(2, 1001), sa(8, 80))];
    let v = PmView { subflows: &subflows, ..v };
    let mut out = vec![];
    Endpoints.on_add_addr(&v, c, &mut out);
    assert_eq!(out, vec![open(ip(3), c)], "C(b) is taken: C(c)");
    let subflows = vec![(sa(1, 1000), sa(9, 80)), (sa(2, 1001), sa(8, 80)), (sa(3, 1002), sa(7, 80))];
    let v = PmView { subflows: &subflows, ..v };
    let mut out = vec![];
    Endpoints.on_add_addr(&v, d, &mut out);
    assert_eq!(out, vec![], "every laminar endpoint is used: no subflow");
    // Only the initial address is laminar: the mode is on, nothing is free.
    let locals = [LocalAddr { laminar: true, ..LocalAddr::plain(0, ip(1)) }, LocalAddr::plain(1, ip(2))];
    let subflows = vec![(sa(1, 1000), sa(9, 80))];
    let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: lim, id_order: true, closing: false };
    let mut out = vec![];
    Endpoints.on_add_addr(&v, b, &mut out);
    assert_eq!(out, vec![]);
    // Without laminar endpoints: the initial address, as before.
    let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2))];
    let v = PmView { locals: &locals, ..v };
    let mut out = vec![];
    Endpoints.on_add_addr(&v, b, &mut out);
    assert_eq!(out, vec![open(ip(1), b)]);
    // The limits still hold.
    let locals = [LocalAddr::plain(0, ip(1)), laminar(1, 2)];
    let v = PmView { locals: &locals, limits: Limits { subflows: 0, add_addr_accepted: 8 }, ..v };
    let mut out = vec![];
    Endpoints.on_add_addr(&v, b, &mut out);
    assert_eq!(out, vec![]);
}

/// A closing connection (the `linux` profile once a DATA_FIN is on its
/// way) leaves no room: no manager opens a subflow.
#[test]
fn no_manager_opens_a_subflow_while_the_connection_closes() {
    let locals = [LocalAddr::plain(0, ip(1)), LocalAddr { subflow: true, ..LocalAddr::plain(1, ip(2)) }];
    let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
    let subflows = [(sa(1, 1000), sa(9, 80))];
    let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 8, add_addr_accepted: 8 }, id_order: false, closing: true };
    let announced = RemoteAddr { id: 1, addr: sa(8, 80) };
    let managers: Vec<Box<dyn PathManager>> = vec![Box::new(FullMesh), Box::new(Endpoints), Box::new(NDiffPorts { n: 4 })];
    for mut pm in managers {
        let mut out = vec![];
        pm.on_established(&v, &mut out);
        pm.on_add_addr(&v, announced, &mut out);
        assert!(out.is_empty(), "{}: {out:?}", pm.name());
        let mut out = vec![];
        pm.on_established(&PmView { closing: false, ..v }, &mut out);
        assert!(out.iter().any(|a| matches!(a, PmAction::Open { .. })), "{} opens when not closing", pm.name());
    }
}

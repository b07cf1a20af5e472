import { BlockList, isIP } from 'node:net';

/**
 * Addresses a crawler must never reach on behalf of users or remote pages.
 * Checked on the literal host of every URL and redirect hop, on every DNS answer before a
 * connection is opened, and on the peer of every socket once it is connected.
 *
 * IPv4: the IANA special-purpose registry (RFC 6890 and successors) — "this network" 0/8,
 * private 10/8, 172.16/12, 192.168/16, CGNAT 100.64/10, loopback 127/8, link-local 169.254/16
 * (cloud metadata lives at 169.254.169.254), IETF protocol assignments 192.0.0/24, the
 * documentation and benchmarking nets, the deprecated 6to4 relay anycast 192.88.99/24,
 * multicast 224/4 and reserved 240/4 (broadcast included).
 *
 * IPv6: only global unicast (2000::/3) is reachable at all, minus the special-purpose blocks
 * inside it. Forms that embed an IPv4 address (mapped, compatible, SIIT-translated, NAT64,
 * 6to4) are judged by the embedded IPv4 address, so `[::ffff:7f00:1]` or `[2002:7f00:1::]`
 * cannot smuggle a request to 127.0.0.1. Everything outside 2000::/3 is refused, which covers
 * `::`, `::1`, the deprecated IPv4-compatible `::a.b.c.d` and SIIT `::ffff:0:a.b.c.d` forms,
 * link-local, ULA and multicast. Teredo (2001::/32) is refused too: its embedded client address
 * is obfuscated and no web server is reached that way.
 */
const blockedV4 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blockedV4.addSubnet(net, prefix, 'ipv4');
}

/** Special-purpose blocks inside 2000::/3 (RFC 6890, RFC 9637 documentation, RFC 9602 SRv6). */
const blockedV6Global = new BlockList();
for (const [net, prefix] of [
  ['2001::', 23], // IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation (RFC 9637)
  ['5f00::', 16], // SRv6 SIDs (RFC 9602)
] as const) {
  blockedV6Global.addSubnet(net, prefix, 'ipv6');
}

/** Parses an IPv6 literal (no brackets; a `%zone` suffix is dropped) into eight 16-bit groups. */
export function parseIPv6(input: string): number[] | null {
  let address = input;
  const zone = address.indexOf('%');
  if (zone >= 0) address = address.slice(0, zone);
  if (isIP(address) !== 6) return null;
  // A trailing dotted IPv4 part stands for the last two groups.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    address = `${address.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = address.split('::') as [string, string | undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  if (tail === undefined ? missing !== 0 : missing < 1) return null;
  const groups = [
    ...headGroups,
    ...Array<string>(tail === undefined ? 0 : missing).fill('0'),
    ...tailGroups,
  ].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

function v4FromGroups(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/**
 * The IPv4 address an IPv6 address stands for, when it embeds one that a host or gateway
 * routes to: mapped `::ffff:a.b.c.d` (what dual-stack sockets report), NAT64 `64:ff9b::/96` and
 * the local-use `64:ff9b:1::/48`, and 6to4 `2002:aabb:ccdd::/48`.
 */
export function embeddedIPv4(groups: readonly number[]): string | null {
  const [g0, g1, g2, , , g5, g6, g7] = groups as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const zeroTo = (n: number) => groups.slice(0, n).every((g) => g === 0);
  if (zeroTo(5) && g5 === 0xffff) return v4FromGroups(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && groups.slice(2, 6).every((g) => g === 0))
    return v4FromGroups(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return v4FromGroups(g6, g7);
  if (g0 === 0x2002) return v4FromGroups(g1, g2);
  return null;
}

/** True when `address` (an IPv4 or IPv6 literal, brackets allowed) must not be connected to. Non-IPs are blocked. */
export function isBlockedAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (isIP(bare) === 4) return blockedV4.check(bare, 'ipv4');
  const groups = parseIPv6(bare);
  if (!groups) return true;
  const v4 = embeddedIPv4(groups);
  if (v4 !== null) return blockedV4.check(v4, 'ipv4');
  // Only global unicast 2000::/3 is reachable; link-local, ULA (fd00:ec2::254 is AWS's metadata),
  // multicast, site-local and the rest are not.
  if ((groups[0]! & 0xe000) !== 0x2000) return true;
  const normalised = groups.map((g) => g.toString(16)).join(':');
  return blockedV6Global.check(normalised, 'ipv6');
}

/**
 * Hostnames refused by name before any DNS lookup: `localhost` and `*.localhost` always mean the
 * local host (RFC 6761 §6.3), whatever a resolver says. The trailing-dot form is the same name.
 */
export function isBlockedHostname(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Ports the WHATWG Fetch standard ("bad port") refuses: well-known non-HTTP services. Any other
 * port is allowed, because career sites do run on 8080 or 8443; what keeps internal services
 * out of reach is the address policy, while this list stops a public page from steering us
 * into cross-protocol requests at public mail, IRC or SIP servers.
 * https://fetch.spec.whatwg.org/#port-blocking
 */
const badPorts = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102,
  103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465,
  512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993,
  995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668,
  6669, 6679, 6697, 10080,
]);

export function isBadPort(port: number): boolean {
  return badPorts.has(port);
}

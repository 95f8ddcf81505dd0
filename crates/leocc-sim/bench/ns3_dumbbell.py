#!/usr/bin/env python3
"""The ns-3 side of the simulator speed comparison (docs/simulator.md, "Speed and memory").

The same scenario as `leocc bench sim`: one TCP flow (CUBIC, 1448-byte segments) over a
100 Mbit/s bottleneck with 20 ms one-way delay each way and a 500-packet droptail queue,
bulk data for DURATION simulated seconds. Prints simulated seconds per wall second and
packets per second, the numbers `leocc bench sim` prints.

Needs the `ns3` package from PyPI (`pip install ns3`, which pulls cppyy; optional, not part of
scripts/setup.sh). Usage: python3 ns3_dumbbell.py [DURATION_S]
"""
import sys
import time

from ns import ns

DURATION_S = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
RATE = "100Mbps"
ONE_WAY_DELAY = "20ms"
QUEUE = "500p"
MSS = 1448
PORT = 9

ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpCubic"))
ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(16 << 20))
ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(16 << 20))

nodes = ns.NodeContainer()
nodes.Create(2)
link = ns.PointToPointHelper()
link.SetDeviceAttribute("DataRate", ns.StringValue(RATE))
link.SetChannelAttribute("Delay", ns.StringValue(ONE_WAY_DELAY))
link.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue(QUEUE))
devices = link.Install(nodes)
ns.InternetStackHelper().Install(nodes)
addresses = ns.Ipv4AddressHelper()
addresses.SetBase(ns.Ipv4Address("100.64.0.0"), ns.Ipv4Mask("255.255.255.0"))
interfaces = addresses.Assign(devices)

sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT).ConvertTo())
sink_apps = sink.Install(nodes.Get(1))
sink_apps.Start(ns.Seconds(0))
source = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(interfaces.GetAddress(1), PORT).ConvertTo())
source.SetAttribute("MaxBytes", ns.UintegerValue(0))
source.SetAttribute("SendSize", ns.UintegerValue(MSS))
source.Install(nodes.Get(0)).Start(ns.Seconds(0))

ns.Simulator.Stop(ns.Seconds(DURATION_S))
started = time.time()
ns.Simulator.Run()
wall = time.time() - started
received = ns.DynamicCast[ns.PacketSink](sink_apps.Get(0)).GetTotalRx()
ns.Simulator.Destroy()

packets = received / MSS
print(f"ns-3 cubic {RATE} {DURATION_S:.0f} s: wall {wall:.2f} s, "
      f"{DURATION_S / wall:.1f}x real time, {packets / wall:.0f} packets/s, "
      f"goodput {received * 8 / DURATION_S / 1e6:.1f} Mbit/s")

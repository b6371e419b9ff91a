// The simulation's point-to-point links — see olaf_link.hpp.

#include "olaf_link.hpp"

#include <stdexcept>

#include "ns3/node.h"
#include "ns3/ppp-header.h"
#include "ns3/simulator.h"

namespace olaf::sim {

using ns3::Ptr;

namespace {

// The PPP header ns-3's point-to-point device puts on every frame: its bytes
// count in the serialisation time.
uint32_t PppBytes() {
  static const uint32_t n = ns3::PppHeader().GetSerializedSize();
  return n;
}

// What a protocol number becomes through a PPP header and back (ns-3's
// EtherToPpp/PppToEther).
uint16_t ThroughPpp(uint16_t protocol) {
  return protocol == 0x0800 || protocol == 0x86DD ? protocol : 0;
}

}  // namespace

NS_OBJECT_ENSURE_REGISTERED(OlafLinkDevice);
NS_OBJECT_ENSURE_REGISTERED(OlafLinkChannel);

ns3::TypeId OlafLinkDevice::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("olaf::sim::OlafLinkDevice")
                               .SetParent<ns3::NetDevice>()
                               .SetGroupName("Olaf")
                               .AddConstructor<OlafLinkDevice>();
  return tid;
}

void OlafLinkDevice::Configure(ns3::DataRate rate, uint32_t queue_packets) {
  if (queue_packets < 1) throw std::invalid_argument("OlafLinkDevice: queue_packets must be >= 1");
  rate_ = rate;
  fifo_.assign(queue_packets, Frame{});
  head_ = size_ = 0;
}

void OlafLinkDevice::Attach(Ptr<OlafLinkChannel> ch) {
  channel_ = ch;
  ch->Attach(this);
}

void OlafLinkDevice::SetPeer(OlafLinkDevice *peer, uint32_t peer_node, ns3::Time delay) {
  peer_ = peer;
  peer_node_ = peer_node;
  delay_ = delay;
  remote_ = peer->GetAddress();
}

Ptr<ns3::Channel> OlafLinkDevice::GetChannel() const { return channel_; }

void OlafLinkDevice::SetAddress(ns3::Address address) {
  address_ = ns3::Mac48Address::ConvertFrom(address);
}

bool OlafLinkDevice::SetMtu(const uint16_t mtu) {
  mtu_ = mtu;
  return true;
}

ns3::Address OlafLinkDevice::GetBroadcast() const { return ns3::Mac48Address::GetBroadcast(); }

ns3::Address OlafLinkDevice::GetMulticast(ns3::Ipv4Address) const {
  return ns3::Mac48Address("01:00:5e:00:00:00");
}

ns3::Address OlafLinkDevice::GetMulticast(ns3::Ipv6Address) const {
  return ns3::Mac48Address("33:33:00:00:00:00");
}

bool OlafLinkDevice::Send(Ptr<ns3::Packet> packet, const ns3::Address &, uint16_t protocol) {
  if (!peer_) {
    if (!drop_cb_.IsNull()) drop_cb_(packet);
    return false;
  }
  Frame f{packet, ThroughPpp(protocol)};
  if (size_ == 0 && !complete_pending_ && ns3::Simulator::Now() >= busy_until_) {
    TransmitStart(std::move(f));
    return true;
  }
  if (size_ == fifo_.size()) {
    if (!drop_cb_.IsNull()) drop_cb_(packet);
    return false;
  }
  fifo_[(head_ + size_) % fifo_.size()] = std::move(f);
  size_++;
  if (!complete_pending_) {
    // The frame on the wire ends at busy_until_: the waiting frame departs
    // then.
    complete_pending_ = true;
    ns3::Simulator::Schedule(busy_until_ - ns3::Simulator::Now(), &OlafLinkDevice::TransmitComplete,
                             this);
  }
  return true;
}

bool OlafLinkDevice::SendFrom(Ptr<ns3::Packet>, const ns3::Address &, const ns3::Address &,
                              uint16_t) {
  return false;
}

void OlafLinkDevice::TransmitStart(Frame f) {
  if (!begin_cb_.IsNull()) begin_cb_();
  const uint32_t bytes = f.packet->GetSize() + PppBytes();
  if (bytes != last_bytes_) {
    last_bytes_ = bytes;
    last_tx_ = rate_.CalculateBytesTxTime(bytes);
  }
  const ns3::Time tx = last_tx_;
  busy_until_ = ns3::Simulator::Now() + tx;
  if (eager_ || size_ > 0) {
    complete_pending_ = true;
    ns3::Simulator::Schedule(tx, &OlafLinkDevice::TransmitComplete, this);
  }
  // The frame reaches the peer `delay` after its last bit (ns-3's PointToPointChannel).
  ns3::Simulator::ScheduleWithContext(peer_node_, tx + delay_, &OlafLinkDevice::Receive, peer_,
                                      std::move(f.packet), f.protocol);
}

void OlafLinkDevice::TransmitComplete() {
  complete_pending_ = false;
  if (!end_cb_.IsNull()) end_cb_();
  if (size_ == 0) return;
  Frame f = std::move(fifo_[head_]);
  fifo_[head_] = Frame{};
  head_ = (head_ + 1) % fifo_.size();
  size_--;
  TransmitStart(std::move(f));
}

void OlafLinkDevice::Receive(Ptr<ns3::Packet> p, uint16_t protocol) {
  if (!rx_cb_.IsNull()) rx_cb_(this, p, protocol, remote_);
}

void OlafLinkDevice::DoDispose() {
  node_ = nullptr;
  channel_ = nullptr;
  peer_ = nullptr;
  fifo_.clear();
  drop_cb_ = {};
  begin_cb_ = {};
  end_cb_ = {};
  rx_cb_ = {};
  ns3::NetDevice::DoDispose();
}

ns3::TypeId OlafLinkChannel::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("olaf::sim::OlafLinkChannel")
                               .SetParent<ns3::Channel>()
                               .SetGroupName("Olaf")
                               .AddConstructor<OlafLinkChannel>();
  return tid;
}

void OlafLinkChannel::Attach(Ptr<OlafLinkDevice> dev) {
  if (n_ == 2) throw std::logic_error("OlafLinkChannel: a point-to-point link joins two devices");
  dev_[n_++] = dev;
  if (n_ == 2) {
    const auto node_id = [](const Ptr<OlafLinkDevice> &d) {
      return d->GetNode() ? d->GetNode()->GetId() : 0;
    };
    dev_[0]->SetPeer(PeekPointer(dev_[1]), node_id(dev_[1]), delay_);
    dev_[1]->SetPeer(PeekPointer(dev_[0]), node_id(dev_[0]), delay_);
  }
}

Ptr<ns3::NetDevice> OlafLinkChannel::GetDevice(std::size_t i) const {
  if (i >= n_) throw std::out_of_range("OlafLinkChannel::GetDevice");
  return dev_[i];
}

}  // namespace olaf::sim

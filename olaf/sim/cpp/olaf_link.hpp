// The simulation's links: a full-duplex point-to-point link of two
// OlafLinkDevices joined by an OlafLinkChannel, the same link model as ns-3's
// PointToPointNetDevice/PointToPointChannel (src/point-to-point, ns-3.44) with
// fewer events per packet.
//
// The model, as ns-3's: each direction serialises one frame at a time at the
// device's data rate, for DataRate::CalculateBytesTxTime(size + 2) (the 2-byte
// PPP header ns-3's device adds, ns3::PppHeader), no interframe gap; the frame
// reaches the peer `delay` after its last bit; frames that arrive while the
// device transmits wait in a drop-tail FIFO of `queue_packets` frames (a full
// FIFO drops the new frame: the drop callback); the receiver gets the protocol
// number the sender passed (0x0800 and 0x86DD; any other arrives as 0, as
// through a PPP header).
//
// Why not ns-3's device: it schedules a TransmitComplete event for every frame,
// even when nothing waits behind it, and adds and strips a PPP header, copies
// the packet and calls eight trace sources per hop. In this simulation most
// links carry one frame at a time (a worker's update, an ACK replica toward a
// worker), so a third of all events were TransmitCompletes that found an empty
// queue. This device schedules TransmitComplete only when it has work: when a
// frame waits behind the one on the wire, or when a listener asked to hear the
// end of each transmission (SetTxEndCallback: the switch's queue port, whose
// egress pumps the OlafQueue). Frames start, end, arrive and drop at the same
// simulated times as on ns-3's device: the departure of a frame that waits is
// scheduled at the same time as ns-3's TransmitComplete. The one difference:
// ns-3 orders same-time events by insertion, and the deferred TransmitComplete
// is inserted when the first frame starts to wait, later than ns-3's (at the
// start of the transmission). A frame offered to a full FIFO in the very
// nanosecond the transmission ends, by an event inserted between those two
// moments, is dropped here and queued by ns-3. bench/sim_identity.py checks
// every committed spec's runs unchanged.

#ifndef OLAF_SIM_OLAF_LINK_HPP_
#define OLAF_SIM_OLAF_LINK_HPP_

#include <cstdint>
#include <vector>

#include "ns3/callback.h"
#include "ns3/channel.h"
#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"

namespace olaf::sim {

class OlafLinkChannel;

class OlafLinkDevice : public ns3::NetDevice {
 public:
  static ns3::TypeId GetTypeId();
  OlafLinkDevice() = default;

  // rate: bit/s; queue_packets >= 1: frames that may wait behind the one on the
  // wire.
  void Configure(ns3::DataRate rate, uint32_t queue_packets);
  void Attach(ns3::Ptr<OlafLinkChannel> ch);
  // Called with each frame the device drops (its FIFO full).
  void SetTxDropCallback(ns3::Callback<void, ns3::Ptr<const ns3::Packet>> cb) { drop_cb_ = cb; }
  // Called when a frame starts and when it ends transmission (before the next
  // waiting frame starts). Setting the end callback makes every transmission
  // schedule its TransmitComplete.
  void SetTxBeginCallback(ns3::Callback<void> cb) { begin_cb_ = cb; }
  void SetTxEndCallback(ns3::Callback<void> cb) {
    end_cb_ = cb;
    eager_ = true;
  }
  // Delivered `delay` after the frame's last bit left the peer.
  void Receive(ns3::Ptr<ns3::Packet> p, uint16_t protocol);
  // The other end of the link (OlafLinkChannel::Attach): its device, node id and
  // the propagation delay. Kept here so that a transmission reads no other object.
  void SetPeer(OlafLinkDevice *peer, uint32_t peer_node, ns3::Time delay);

  // ns3::NetDevice
  void SetIfIndex(const uint32_t index) override { if_index_ = index; }
  uint32_t GetIfIndex() const override { return if_index_; }
  ns3::Ptr<ns3::Channel> GetChannel() const override;
  void SetAddress(ns3::Address address) override;
  ns3::Address GetAddress() const override { return address_; }
  bool SetMtu(const uint16_t mtu) override;
  uint16_t GetMtu() const override { return mtu_; }
  bool IsLinkUp() const override { return peer_ != nullptr; }
  void AddLinkChangeCallback(ns3::Callback<void> callback) override {}
  bool IsBroadcast() const override { return true; }
  ns3::Address GetBroadcast() const override;
  bool IsMulticast() const override { return false; }
  ns3::Address GetMulticast(ns3::Ipv4Address group) const override;
  ns3::Address GetMulticast(ns3::Ipv6Address addr) const override;
  bool IsBridge() const override { return false; }
  bool IsPointToPoint() const override { return true; }
  bool Send(ns3::Ptr<ns3::Packet> packet, const ns3::Address &dest,
            uint16_t protocolNumber) override;
  bool SendFrom(ns3::Ptr<ns3::Packet> packet, const ns3::Address &source, const ns3::Address &dest,
                uint16_t protocolNumber) override;
  ns3::Ptr<ns3::Node> GetNode() const override { return node_; }
  void SetNode(ns3::Ptr<ns3::Node> node) override { node_ = node; }
  bool NeedsArp() const override { return false; }
  void SetReceiveCallback(ns3::NetDevice::ReceiveCallback cb) override { rx_cb_ = cb; }
  void SetPromiscReceiveCallback(ns3::NetDevice::PromiscReceiveCallback cb) override {}
  bool SupportsSendFrom() const override { return false; }

 protected:
  void DoDispose() override;

 private:
  struct Frame {
    ns3::Ptr<ns3::Packet> packet;
    uint16_t protocol;
  };
  void TransmitStart(Frame f);
  void TransmitComplete();

  ns3::Ptr<ns3::Node> node_;
  ns3::Ptr<OlafLinkChannel> channel_;
  OlafLinkDevice *peer_ = nullptr;  // the channel holds both devices
  uint32_t peer_node_ = 0;
  ns3::Time delay_;
  ns3::Mac48Address address_;
  uint32_t if_index_ = 0;
  uint16_t mtu_ = 1500;
  ns3::DataRate rate_;
  uint32_t last_bytes_ = 0;  // the last frame's bytes (PPP included) and its
  ns3::Time last_tx_;        // serialisation time: frames come in few sizes
  // The FIFO of waiting frames: a ring of queue_packets slots.
  std::vector<Frame> fifo_;
  size_t head_ = 0, size_ = 0;
  ns3::Time busy_until_;           // end of the frame on the wire (the past when idle)
  bool complete_pending_ = false;  // a TransmitComplete is scheduled
  bool eager_ = false;             // schedule TransmitComplete for every frame
  ns3::Callback<void, ns3::Ptr<const ns3::Packet>> drop_cb_;
  ns3::Callback<void> begin_cb_, end_cb_;
  ns3::NetDevice::ReceiveCallback rx_cb_;
  ns3::Address remote_;  // the peer's address (the receive callback's `from`)
};

class OlafLinkChannel : public ns3::Channel {
 public:
  static ns3::TypeId GetTypeId();
  explicit OlafLinkChannel(ns3::Time delay = ns3::Time()) : delay_(delay) {}

  // Joins a device (two per channel; the second makes each the other's peer).
  // Throws std::logic_error for a third.
  void Attach(ns3::Ptr<OlafLinkDevice> dev);

  // ns3::Channel
  std::size_t GetNDevices() const override { return n_; }
  ns3::Ptr<ns3::NetDevice> GetDevice(std::size_t i) const override;

 private:
  ns3::Time delay_;
  ns3::Ptr<OlafLinkDevice> dev_[2];
  std::size_t n_ = 0;
};

}  // namespace olaf::sim

#endif  // OLAF_SIM_OLAF_LINK_HPP_

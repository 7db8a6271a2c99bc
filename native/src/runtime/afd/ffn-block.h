// An FFN rank's block: the attention ranks it serves (its peers) and how it gathers them.
// The TCP connector carries the handshake, the control plane and, with connector tcp, the
// hidden states; with a device connector (nccl, peer) the block's device data plane,
// built after every gathering, carries them. With expert parallelism the FFN group forms
// inside the gathering, before the block is acknowledged, so attention ranks start
// stepping only once every FFN rank of the group can serve.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "comm/data-plane.h"
#include "comm/rendezvous.h"
#include "core/backend.h"
#include "ep/ffn-group.h"
#include "runtime/afd/device-plane.h"
#include "runtime/connectors.h"

namespace afd {

class FfnBlock {
 public:
  // Binds the listening port at once (a busy port is an error here).
  FfnBlock(const comm::RendezvousConfig& config, ConnectorKind connector, int maxStepTokens, Backend& backend);
  // Expert parallelism: the FFN group that forms inside every gathering (set before the
  // first; it outlives the block).
  void attachGroup(EpFfnGroup* group) { group_ = group; }

  // Accepts and handshakes every peer (forming the FFN group, then onGroupFormed, at the
  // same point on every group rank), then builds a fresh device plane (the previous one is
  // aborted). timeoutMs: -1 the configured rendezvous timeout, 0 forever. Throws CommError.
  void gather(comm::StopFlag stop, int timeoutMs, const std::function<void()>& onGroupFormed);
  // The next step's control payload; false when stopped (*by empty) or shut down (*by names
  // who). With expert parallelism a group peer's step start also wakes this rank.
  bool recvStep(comm::ControlPayload* payload, comm::StopFlag stop, std::string* by);
  // Says goodbye to every peer with `message` and closes their links (the listener stays).
  void release(const std::string& message) { connector_.closePeers(message); }
  void closeListener() { connector_.closeListener(); }

  // The TCP connector (handshake, control; the data plane with connector tcp).
  comm::FfnRendezvous& connector() { return connector_; }
  // The device plane (nccl, peer); null with connector tcp.
  comm::DataPlane* devicePlane() { return devicePlane_.get(); }
  // The plane hidden states travel on: the device plane or the TCP connector.
  comm::DataPlane& data() { return devicePlane_ ? *devicePlane_ : static_cast<comm::DataPlane&>(connector_); }
  bool deviceWire() const { return movesDeviceMemory(connectorKind_); }

  int peersJoined() const { return connector_.peersJoined(); }
  int blockSize() const { return connector_.blockSize(); }
  int firstAttentionRank() const { return connector_.block().start; }
  const std::string& listenAddress() const { return connector_.listenAddress(); }

 private:
  // Device connectors: sends each peer its bootstrap blob and builds a fresh plane.
  void rebuildDevicePlane();

  const comm::RendezvousConfig& config_;
  comm::FfnRendezvous connector_;
  ConnectorKind connectorKind_;
  int maxStepTokens_;  // sizes the peer-memory inboxes
  Backend& backend_;
  EpFfnGroup* group_ = nullptr;
  std::unique_ptr<comm::DataPlane> devicePlane_;
};

}  // namespace afd

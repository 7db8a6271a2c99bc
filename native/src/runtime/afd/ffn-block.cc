#include "runtime/afd/ffn-block.h"

#include <algorithm>

#include "runtime/afd/connector-options.h"

namespace afd {

FfnBlock::FfnBlock(const comm::RendezvousConfig& config, ConnectorKind connector, int maxStepTokens, Backend& backend)
    : config_(config), connector_(config), connectorKind_(connector), maxStepTokens_(maxStepTokens), backend_(backend) {}

void FfnBlock::gather(comm::StopFlag stop, int timeoutMs, const std::function<void()>& onGroupFormed) {
  std::function<void()> formGroup;
  if (group_) {
    formGroup = [this, stop, timeoutMs, &onGroupFormed] {
      group_->mesh().form(stop, timeoutMs);
      onGroupFormed();  // right after the formation, where every group peer is too
    };
  }
  connector_.acceptPeers(stop, timeoutMs, formGroup);
  rebuildDevicePlane();
}

bool FfnBlock::recvStep(comm::ControlPayload* payload, comm::StopFlag stop, std::string* by) {
  if (!group_) return connector_.recvStep(payload, stop, by, nullptr);
  comm::FfnRendezvous::StepWake wake;
  wake.fds = group_->mesh().pollFds();
  wake.onWake = [this](size_t i, std::string* who) { return group_->mesh().absorbWake(i, who); };
  return connector_.recvStep(payload, stop, by, &wake);
}

void FfnBlock::rebuildDevicePlane() {
  if (!deviceWire()) return;
  devicePlane_.reset();
  DevicePlaneExchange exchange;
  exchange.send = [this](int p, const std::vector<uint8_t>& blob) { connector_.sendBootstrap(p, blob); };
  // The reply comes once the attention rank has mapped this rank's inboxes (CUDA IPC, peer access): allow for that.
  exchange.recv = [this](int p) { return connector_.recvBootstrapReply(p, std::max(config_.stepDeadlineMs, 30000)); };
  devicePlane_ = buildDevicePlane(connectorKind_, backend_, true, connector_.blockSize(), devicePlaneOptions(config_, maxStepTokens_),
                                  exchange, "FFN rank " + std::to_string(config_.rank));
}

}  // namespace afd

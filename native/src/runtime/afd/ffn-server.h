// The FFN role's daemon loop on a native thread. It owns the FFN side of the connector:
// rendezvous with the attention ranks of its block, then per step block on the control
// plane and, for each layer and stage, receive from every peer, concatenate along
// tokens, run the engine's FFN half, split and send each slice back to its sender.
// A lost peer ends the step: the block is told (goodbye) and rendezvous again, so a
// restarted rank rejoins. A shutdown flag from an attention rank (or stop()) ends the
// loop cleanly. The FFN role has no scheduler: nothing here takes a StepPlan.
// With expert parallelism (AfdConnectorOptions.expertParallel, several FFN ranks) the
// FFN ranks also form a group (ep/ffn-group.h): rendezvous forms it before the
// block is acknowledged, every group step starts with the group's barrier (an idle rank
// is woken by it and calls its block in), MoE layers run through the group's exchange
// for as many stages as the group's largest step, and a failure anywhere in the group
// fails the step on every rank (the group then forms again).
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/rendezvous.h"
#include "ep/ffn-group.h"
#include "runtime/afd/connector-options.h"
#include "runtime/afd/ffn-step-graphs.h"
#include "runtime/engine/engine.h"

namespace afd {

class AfdFfnServer {
 public:
  enum class State { kCreated, kRendezvous, kServing, kStopped, kFailed };
  struct Snapshot {
    State state = State::kCreated;
    int peersJoined = 0;
    int blockSize = 0;
    int firstAttentionRank = 0;  // the block is attention ranks [first, first + blockSize)
    std::string listenAddress;   // "host:port" actually bound
    std::string lastError;       // most recent peer loss or failure; empty when none
    uint64_t peerLosses = 0;
    std::string exitReason;      // why the loop ended (stopped / failed only)
  };

  // Binds the listening port at once, so a busy port is an error here, not later.
  AfdFfnServer(std::shared_ptr<Engine> engine, const AfdConnectorOptions& options);
  ~AfdFfnServer();

  // Starts the loop thread (rendezvous first).
  void start();
  // Blocks until the first rendezvous completed; throws its error (timeout, stop).
  void waitReady();
  // Blocks until the loop ended; returns the exit reason (shutdown flag, stop, failure).
  std::string waitExit();
  // Ends the loop (peers see a goodbye) and joins the thread. Idempotent.
  void stop();
  Snapshot snapshot() const;
  static const char* stateName(State s);
  // Expert parallelism: the group's counters and this rank's experts; null when off.
  EpFfnGroup* expertGroup() { return ep_.get(); }

 private:
  void loop();
  // Gathers the block (and, with expert parallelism, forms the FFN group before the
  // block's acknowledgement), then builds the device plane. timeoutMs as acceptPeers.
  void rendezvous(int timeoutMs);
  // Expert parallelism over a device transport: a fresh exchange after every formation.
  void bootstrapExpertExchange();
  // Expert parallelism: an MoE layer's stage through the group (host rows [rows, H] in the
  // activation dtype; logits [rows, E] f32 or null).
  void runExpertParallel(int layer, int stage, int64_t rows, const void* hidden, const float* logits, void* out);
  // Serves steps until the shutdown flag (true, *by = who) or stop (false). Throws CommError on a lost peer.
  bool serve(std::string* by);
  void runLayerStage(int layer, int stage);
  // Device connectors: after every rendezvous, sends each peer its bootstrap blob and
  // builds a fresh plane (the previous one is aborted). No-op for tcp.
  void bootstrapDevicePlane();
  // The plane hidden states travel on: the device plane (nccl, peer) or the TCP connector.
  comm::DataPlane& data() { return devicePlane_ ? *devicePlane_ : static_cast<comm::DataPlane&>(connector_); }
  // runLayerStage on a device plane: receive into device rows (hidden [rows, H], logits
  // [rows, E]), run the FFN half on the engine's stream, send each peer its slice.
  void runLayerStageDevice(int layer, int stage, int64_t rows, bool withLogits);
  // ---- CUDA graphs of the whole step (ffn-server-graph-step.cc). On a device wire
  // with one attention peer, the control payload's capture flag captures the step keyed
  // by its per-stage rows (and launches it once: the step crosses the wire exactly once,
  // as on every other step); the replay flag replays a cached key. Several peers (their
  // flags are OR-merged, so agreement cannot be told) and options.ffnGraphs false run eagerly.
  // Returns false when this step runs eagerly.
  bool runGraphStep();
  // Counts an eager step on a device wire as a graph miss.
  void noteEagerStep();
  void growDeviceBuffers(int64_t maxStageRows, const int64_t stageRows[2], bool anyLogits);
  void countStageBytes(int layer, int stage, int64_t rows, bool withLogits);
  int64_t stageRows(int stage) const;
  void setState(State s);
  void finish(State s, const std::string& reason);

  std::shared_ptr<Engine> engine_;
  comm::RendezvousConfig config_;
  comm::FfnRendezvous connector_;
  ConnectorKind connectorKind_ = ConnectorKind::Tcp;
  int maxStepTokens_ = 2048;   // sizes the peer-memory inboxes (AfdConnectorOptions)
  bool deviceWire_ = false;
  bool graphsAllowed_ = true;  // AfdConnectorOptions.ffnGraphs
  std::unique_ptr<comm::DataPlane> devicePlane_;
  std::unique_ptr<FfnStepGraphs> graphs_;  // null: eager only
  int64_t warmRows_ = 0;                   // most rows any FFN forward has run at (scratch sized for it)
  Buffer hiddenDev_, logitsDev_, outDev_[comm::kMaxStages];  // grow-only device step buffers (nccl)
  std::atomic<bool> stop_{false};
  std::thread thread_;
  comm::ControlPayload payload_;
  // Grow-only host step buffers (tcp): hidden / out rows in the activation dtype (bytes), logits f32.
  std::vector<uint8_t> hidden_, out_[comm::kMaxStages];
  std::vector<float> logits_;
  // Bytes per activation element (engine's activation dtype).
  size_t actBytes() const { return config_.model.activationBytes; }
  std::vector<int64_t> rowOffset_;  // [peers + 1] row offsets of the current stage
  bool sampled_ = false;
  // AfdConnectorOptions.faultLayerDelayUs (fault tests: a kill of this process lands inside
  // the attention rank's layer loop; eager steps only).
  int faultLayerDelayUs_ = 0;
  std::unique_ptr<EpFfnGroup> ep_;  // expert parallelism; null when off
  EpTransport epTransport_ = EpTransport::Tcp;  // expert parallelism's exchange: tcp (host mesh), peer or nccl (device)
  int64_t epCapMax_ = 0;            // most rows of one stage of this rank's block (device exchange sections)
  int64_t epCap_ = 0;               // this step's section rows: the group's largest stage
  int64_t warmCap_ = 0;             // largest section rows the device exchange's experts ran at
  bool epDevice() const { return ep_ && ep_->device() != nullptr; }
  // Device exchange: the step's sections and which rows are tokens, before any layer.
  void beginDeviceExchangeStep();
  int stepStages_ = 1;              // stages of this step: the block's, or the FFN group's largest
  std::vector<uint8_t> realRow_;    // [rows] row r of the stage is a token (not a placeholder)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kCreated;
  bool ready_ = false;   // first rendezvous finished (ok or not)
  bool exited_ = false;
  std::string readyError_, exitReason_, lastError_;
  uint64_t peerLosses_ = 0;
};

}  // namespace afd

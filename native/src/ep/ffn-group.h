// One FFN rank's part of static expert parallelism: for each MoE layer and stage of a
// group step it routes its block's rows (router here, or logits from attention; the
// layer's own routing, DeepSeek's grouped top-k included),
// dispatches every token-expert pair to the FFN rank that owns the expert (all-to-all
// over the group's mesh), runs its own experts on every pair it received, returns the
// outputs to their source ranks and combines them with the routing weights (in
// expert-id order, as the colocated MoE sums), adding the shared experts (DeepSeek;
// replicated on every rank) on the source. Every rank joins every exchange, with
// empty frames when its block sent only placeholder rows.
//
// Tensors are host memory in the activation dtype of the wire (element size from the
// tensor's dtype); on backends that do not share host memory (CUDA) the router and the
// experts run on the device and rows are staged through device buffers.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "comm/ep-mesh.h"
#include "ep/device-exchange.h"
#include "ep/dispatch.h"
#include "ep/stats.h"
#include "model/model.h"

namespace afd {

class EpFfnGroup {
 public:
  // maxRowsPerStage: most rows one stage of this rank's block can bring (bounds what a
  // peer may dispatch here).
  EpFfnGroup(FfnModel& ffn, std::mutex& engineMutex, comm::EpMeshConfig mesh, int64_t maxRowsPerStage);

  comm::EpMesh& mesh() { return *mesh_; }
  EpStats& stats() { return stats_; }
  const ExpertRange& experts() const { return ffn_.expertRange(); }

  // hidden: host [rows, H]; logits: host [rows, E] f32 or null (route here);
  // real[r] != 0 where row r is a token (placeholder rows are not routed; their output is 0);
  // out: host [rows, H]. rows may be 0 (a stage this rank's block does not have).
  void moeLayer(int layer, int stage, const Tensor& hidden, const Tensor* logits, const std::vector<uint8_t>& real,
                Tensor& out, comm::StopFlag stop);

  // The device exchange (ep/device-exchange.h), built after every formation of the
  // group (every rank at the same point; the previous one is aborted and freed first).
  // capMax: most rows of one stage of this rank's block.
  void buildDeviceExchange(EpTransport transport, int64_t capMax, int waitDeadlineMs, comm::StopFlag stop);
  EpDeviceExchange* device() { return device_.get(); }
  // One MoE layer and stage on the device (stream work only, capturable): hidden [T, H],
  // logits [T, E] f32 or null, out [T, H], all device memory; T may be 0 (a stage only
  // other ranks have). The step's sections were set by device()->beginStep.
  void moeLayerDevice(int layer, int stage, const Tensor& hidden, const Tensor* logits, Tensor& out);
  // Runs every MoE layer's device work once at `rows` rows and section rows `cap` off the
  // wire (hidden: zeros [rows, H], logits: zeros [rows, E] or null), so a capture at those
  // sizes neither allocates nor synchronizes.
  void warmDevice(const Tensor& hidden, const Tensor* logits, int64_t cap);
  // Folds the device exchange's counters into stats() (between steps).
  void refreshDeviceStats();

 private:
  // Router + top-k over the gathered real rows xr [R, H] (logits lr [R, E] or null):
  // ids_ and weights_ [R, K] on the host.
  void route(int layer, const Tensor& xr, const Tensor* lr);
  // combined [R, H] (host) += the layer's shared experts on xr (DeepSeek); no-op without any.
  void addSharedExperts(int layer, const Tensor& xr, Tensor& combined);
  // The experts of this rank on every received pair: x [N, H], ids [N] -> y [N, H] (host).
  void runExperts(int layer, const Tensor& x, const int32_t* ids, Tensor& y);
  // A host tensor as the backend sees it (staged into `buf` when it does not share host memory).
  Tensor onDevice(const Tensor& host, Buffer& buf);
  void toHost(const Tensor& dev, const Tensor& host);

  FfnModel& ffn_;
  Backend& backend_;
  std::mutex& engineMutex_;
  std::unique_ptr<comm::EpMesh> mesh_;
  EpStats stats_;
  int64_t maxDispatchBytes_ = 0;
  // Reused host buffers.
  std::vector<uint8_t> xr_, lr_, xAll_, yAll_, combined_, shared_;
  std::vector<int32_t> ids_, idsAll_;
  std::vector<float> weights_, ones_, acc_;
  std::vector<int64_t> realRows_;
  std::vector<std::vector<uint8_t>> send_, recv_, ySend_, yRecv_;
  // Device exchange: a layer's routing of hidden [T, H] (T may be 0) into routeIds_ /
  // routeWeights_, and its shared experts into sharedOut_ (DeepSeek). Engine mutex held.
  struct DeviceRoute {
    Tensor ids, weights, shared;
    bool hasShared;
  };
  DeviceRoute routeDevice(int layer, const Tensor& hidden, const Tensor* logits);
  // The device exchange, its routing buffers and what its counters read last.
  std::unique_ptr<EpDeviceExchange> device_;
  Buffer routeIds_, routeWeights_, routeLogits_, sharedOut_;
  EpDeviceCounters seen_;
  // Device staging (backends that do not share host memory).
  Buffer xDev_, lDev_, idsDev_, wDev_, xAllDev_, idsAllDev_, onesDev_, yAllDev_, combinedDev_, sharedDev_;
};

}  // namespace afd

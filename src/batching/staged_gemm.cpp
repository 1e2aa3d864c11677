/// The staged GEMM backend: host operands go to the device through pinned buffers with
/// asynchronous copies, and copies overlap the GEMMs of neighbouring batches.
///
/// Pipeline (three streams, two slots of each buffer):
///  - operand slot s (alternating per call): the host waits until slot s's previous upload
///    left the pinned buffer, packs the operand into it, and the copy-in stream waits until the
///    GEMM that last read device slot s finished before uploading; the GEMM waits for the upload.
///    So batch t+1 is packed and uploaded while batch t multiplies.
///  - operands that recur (the same host block again, e.g. Cholesky vectors reused by every
///    output block) are kept resident on the device while they fit `resident_bytes`. A kept
///    operand whose host memory nobody but the backend holds any more (the caller dropped it,
///    e.g. one iteration's amplitudes) is freed before a new one is kept, so a backend that
///    lives for a whole run holds neither device nor host memory of dead tensors.
///  - the output stays on the device while consecutive calls accumulate into the same block
///    (a split contracted axis); it is copied back on the copy-out stream when the next output
///    block starts, and unpacked into the host tensor only when its slot is needed again or at
///    synchronize(). So the download of block t overlaps the GEMMs of block t+1.
///  - the device memory of all of it (staging buffers, kept intermediates, resident operands) is
///    counted and held within StagedGemmOptions::device_budget_bytes (BudgetedDeviceOps): an
///    operand is kept resident only where it fits without evicting anything, and when staging
///    needs room, idle pooled buffers, staging buffers the current call does not use and then
///    resident operands (least recently read first) are freed (make_room).
///  - a multi-step plan's intermediates stay on the device (keep / copy_kept): their GEMMs write
///    device buffers, their layout copies run there (DeviceOps::strided_copy), and the next
///    step's GEMM reads them there, all on the compute stream, so stream order is their only
///    dependency. Their device buffers go back to a pool, reused by later intermediates.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "batching/budgeted_device_ops.hpp"
#include "batching/device_ops.hpp"
#include "batching/kept_buffers.hpp"
#include "core/errors.hpp"
#include "core/host_parallel.hpp"

namespace nnvmc::batching {

namespace {

/// memcpy spread over the intra-op threads: packing operands into pinned buffers and unpacking
/// results is the staged path's host work, which the planner charges at the host's (threaded)
/// copy rate.
void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t chunk = std::size_t(1) << 22;  // 4 MiB per task
  const auto chunks = static_cast<std::int64_t>((bytes + chunk - 1) / chunk);
  at::parallel_for(0, chunks, 1, [&](std::int64_t begin, std::int64_t end) {
    const std::size_t lo = std::size_t(begin) * chunk, hi = std::min(bytes, std::size_t(end) * chunk);
    std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, hi - lo);
  });
}

/// A device buffer and its pinned host twin, each grown on demand.
struct Staging {
  void* dev = nullptr;
  void* host = nullptr;
  std::size_t dev_bytes = 0, host_bytes = 0;
};

class StagedGemmBackend final : public GemmBackend {
 public:
  StagedGemmBackend(std::unique_ptr<DeviceOps> ops, StagedGemmOptions options)
      : ops_(budgeted(std::move(ops), options.device_budget_bytes)), options_(options) {
    ops_->set_make_room([this](std::int64_t over) { make_room(over); });
    if (options_.resident_bytes < 0)  // free_device_bytes: at most what the budget leaves
      options_.resident_bytes = static_cast<std::int64_t>(ops_->free_device_bytes() / 2);
  }
  ~StagedGemmBackend() override {
    // destructors must not throw; the results are then incomplete anyway
    try {
      synchronize();
    } catch (...) {
    }
    try {
      ops_->synchronize_all();
    } catch (...) {
    }
    for (auto& slot : in_)
      for (auto& s : slot) release(s);
    for (auto& s : out_) release(s);
    for (auto& [key, r] : resident_) ops_->device_free(r.dev);
  }

  void bmm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, bool accumulate) override {
    bmm(a, b, c, accumulate, false, false);
  }
  void bmm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, bool accumulate, bool stable_a,
           bool stable_b) override {
    if (!a.device().is_cpu() || !b.device().is_cpu() || !c.device().is_cpu() || !c.is_contiguous())
      throw InputError("staged GEMM backend: expects host tensors and a contiguous output");
    if (a.scalar_type() != at::kDouble && a.scalar_type() != at::kFloat)
      throw InputError("staged GEMM backend: only float64 and float32");
    GemmCall call;
    call.f64 = a.scalar_type() == at::kDouble;
    call.batch = a.size(0), call.m = a.size(1), call.k = a.size(2), call.n = b.size(2);
    const auto kc = kept_.find(c.data_ptr());
    const bool c_kept = kc.has_value();
    if (c_kept && (kc->host != c.data_ptr() || accumulate || std::size_t(c.nbytes()) != kc->bytes))
      throw Error("staged GEMM backend: a kept intermediate is written whole by one GEMM");
    if (call.batch == 0 || call.m == 0 || call.n == 0) return;  // nothing to write
    if (call.k == 0) {  // an empty sum: c = 0 or unchanged, written on the host
      if (c_kept) release(c);  // no longer kept (other kept intermediates stay)
      drain();
      if (!accumulate) c.zero_();
      return;
    }
    bool copied_a = false, copied_b = false;
    const void* ka = kept_operand(a, call.trans_a);
    const void* kb = kept_operand(b, call.trans_b);
    const at::Tensor ha = ka ? a : host_layout(a, call.trans_a, copied_a);
    const at::Tensor hb = kb ? b : host_layout(b, call.trans_b, copied_b);
    call.stride_a = call.m * call.k, call.stride_b = call.k * call.n;
    call_ = calls_++;
    in_call_.clear();  // (also cleared once the GEMM is queued; a call that threw left it filled)
    const int slot = static_cast<int>(call_ % 2);
    std::vector<DeviceOps::Event> uploads;
    call.a = ka ? ka : device_operand(ha, stable_a && !copied_a, slot, 0, uploads);
    call.b = kb ? kb : device_operand(hb, stable_b && !copied_b, slot, 1, uploads);
    call.c = c_kept ? kc->dev : output_buffer(c, accumulate, uploads);
    call.accumulate = accumulate;
    for (auto e : uploads) ops_->wait(Stream::compute, e);
    try {
      ops_->gemm(call, Stream::compute);
    } catch (...) {
      if (!c_kept) open_ = Open{};  // nothing is downloaded from a block the GEMM may not have written
      throw;
    }
    in_call_.clear();  // queued: stream order protects its buffers from here on
    gemm_done_[slot] = ops_->record(Stream::compute);
    has_gemm_[slot] = true;
    if (!c_kept) open_.written = gemm_done_[slot];  // its download need not wait for later GEMMs
  }

  void synchronize() override {
    kept_.release_all();
    try {
      drain();
    } catch (...) {  // a failed drain leaves no download pending into host memory the caller reuses
      open_ = Open{};
      downloads_[0] = downloads_[1] = Download{};
      throw;
    }
  }

  /// Completes every outstanding copy and GEMM (results unpacked into their host tensors);
  /// kept intermediates stay kept.
  void drain() {
    close_output();
    finish_all();
    // Everything enqueued so far has completed (every upload feeds a GEMM whose output was
    // downloaded): the events can be reused, and nothing needs to wait for them any more.
    ops_->synchronize_all();
    ops_->recycle_events();
    has_upload_[0][0] = has_upload_[0][1] = has_upload_[1][0] = has_upload_[1][1] = false;
    has_gemm_[0] = has_gemm_[1] = false;
    for (auto& [key, r] : resident_) r.ready = kNoEvent;
  }

  std::int64_t bytes_h2d() const override { return h2d_; }
  std::int64_t bytes_d2h() const override { return d2h_; }
  std::int64_t device_budget_bytes() const override { return ops_->budget(); }
  std::int64_t peak_device_bytes() const override { return ops_->peak(); }

  bool keeps_intermediates() const override { return true; }

  void keep(const at::Tensor& c) override {
    if (!c.device().is_cpu() || !c.is_contiguous())
      throw InputError("staged GEMM backend: a kept intermediate must be a contiguous host tensor");
    kept_.keep(c.data_ptr(), static_cast<std::size_t>(c.nbytes()));
  }

  bool copy_kept(const at::Tensor& src, const at::Tensor& dst) override {
    const auto kept = kept_.find(src.data_ptr());
    if (!kept) return false;
    const auto* d0 = static_cast<const char*>(dst.data_ptr());
    if (!dst.device().is_cpu() || !dst.is_contiguous() || dst.scalar_type() != src.scalar_type() ||
        dst.sizes() != src.sizes() || (d0 < kept->host + kept->bytes && kept->host < d0 + dst.nbytes()))
      throw InputError("staged GEMM backend: a layout copy of a kept intermediate needs a separate contiguous host "
                       "tensor of the source's shape");
    if (src.dim() > kMaxCopyRank) {  // too many dimensions for the kernel: copy on the host
      fetch(*kept);
      return false;
    }
    StridedCopy call;
    call.f64 = src.scalar_type() == at::kDouble;
    for (std::int64_t d = 0; d < src.dim(); ++d) {  // coalesced: unit dims dropped, runs merged
      if (src.size(d) == 1) continue;
      if (call.rank > 0 && call.strides[call.rank - 1] == src.stride(d) * src.size(d)) {
        call.sizes[call.rank - 1] *= src.size(d);
        call.strides[call.rank - 1] = src.stride(d);
        continue;
      }
      call.sizes[call.rank] = src.size(d), call.strides[call.rank] = src.stride(d), ++call.rank;
    }
    call.src = static_cast<const char*>(kept->dev) + (static_cast<const char*>(src.data_ptr()) - kept->host);
    call.dst = kept_.keep(dst.data_ptr(), static_cast<std::size_t>(dst.nbytes()));
    ops_->strided_copy(call, Stream::compute);
    return true;
  }

  void fetch_kept(const at::Tensor& t) override {
    if (const auto kept = kept_.find(t.data_ptr())) fetch(*kept);
  }

  void release(const at::Tensor& t) override { kept_.release(t.data_ptr()); }

 private:
  using Key = std::tuple<const void*, std::int64_t, std::int64_t>;  ///< host pointer, bytes, version

  static constexpr DeviceOps::Event kNoEvent = -1;

  struct Resident {
    void* dev = nullptr;
    DeviceOps::Event ready = kNoEvent;  ///< its upload (kNoEvent once known complete)
    at::Tensor host;  ///< held, so no other tensor can reuse the address while cached
    std::int64_t last_call = 0;  ///< the latest call that read it (eviction: least recent first)
  };

  /// `ops` wrapped to count its device memory and hold it within `budget` (< 0: kAutoFraction
  /// of the device's free memory now; 0: no limit).
  /// @throws BudgetError when an explicit budget is more than the device's free memory now (it
  /// would fail later, inside the run, with the device allocator's own error).
  static std::unique_ptr<BudgetedDeviceOps> budgeted(std::unique_ptr<DeviceOps> ops, std::int64_t budget) {
    const auto free = static_cast<std::int64_t>(ops->free_device_bytes());
    if (budget < 0)  // (at least one byte: 0 would mean no limit)
      budget = std::max<std::int64_t>(1, MemoryBudget::auto_bytes("cuda", free));
    else if (budget > free)
      throw BudgetError("device memory budget of " + format_bytes(double(budget)) + " is more than the device's free memory (" +
                        format_bytes(double(free)) + "): give at most that, or 'auto' (" +
                        format_bytes(double(MemoryBudget::auto_bytes("cuda", free))) + ")");
    return std::make_unique<BudgetedDeviceOps>(std::move(ops), budget);
  }

  /// Frees at least `over` device bytes if it can (an allocation would pass the device budget):
  /// idle pooled buffers first, then staging buffers the current call does not use (they are
  /// made again, at the size then needed, when a later call needs them), then resident
  /// operands, least recently read first, except those the current call reads. The open output
  /// block and kept intermediates hold live data and stay.
  void make_room(std::int64_t over) {
    ops_->synchronize_all();  // nothing queued still reads what is freed
    over -= kept_.free_idle();
    const auto in_call = [&](const void* p) { return std::find(in_call_.begin(), in_call_.end(), p) != in_call_.end(); };
    for (int s = 0; s < 2 && over > 0; ++s) {
      for (auto* st : {&in_[s][0], &in_[s][1], &out_[s]}) {
        if (!st->dev || in_call(st->dev) || (st == &out_[s] && open_.active && open_.slot == s)) continue;
        ops_->device_free(st->dev);
        over -= std::int64_t(st->dev_bytes);
        st->dev = nullptr, st->dev_bytes = 0;
      }
    }
    while (over > 0) {
      auto victim = resident_.end();
      for (auto it = resident_.begin(); it != resident_.end(); ++it)
        if (!in_call(it->second.dev) &&
            (victim == resident_.end() || it->second.last_call < victim->second.last_call))
          victim = it;
      if (victim == resident_.end()) return;
      const auto bytes = std::int64_t(victim->second.host.nbytes());
      ops_->device_free(victim->second.dev);
      resident_used_ -= bytes;
      over -= bytes;
      resident_.erase(victim);
    }
  }

  struct Download {  ///< a device → pinned copy whose unpacking into `dest` is pending
    bool pending = false;
    at::Tensor dest;
    DeviceOps::Event done = 0;
    std::int64_t order = 0;  ///< issue order: older downloads are unpacked first
  };
  /// The device address of operand `x` [B, R, C] when it views a kept intermediate (row-major,
  /// or the transpose of a row-major [B, C, R]: `trans`), else nullptr.
  const void* kept_operand(const at::Tensor& x, bool& trans) {
    const auto kept = kept_.find(x.data_ptr());
    if (!kept) return nullptr;
    if (x.is_contiguous()) trans = false;
    else if (x.transpose(1, 2).is_contiguous()) trans = true;
    else throw InputError("staged GEMM backend: a kept intermediate must reach a GEMM in a matrix layout");
    return static_cast<const char*>(kept->dev) + (static_cast<const char*>(x.data_ptr()) - kept->host);
  }
  /// Downloads a kept intermediate into its host memory (the host reads it next) and forgets it.
  void fetch(const KeptBuffers::Entry& kept) {
    ops_->copy_to_host(const_cast<char*>(kept.host), kept.dev, kept.bytes, Stream::compute);
    ops_->synchronize(ops_->record(Stream::compute));
    d2h_ += std::int64_t(kept.bytes);
    kept_.release(kept.host);
  }

  struct Open {  ///< the output block the GEMMs write now (still on the device)
    bool active = false;
    at::Tensor dest;
    int slot = 0;
    DeviceOps::Event written = kNoEvent;  ///< after its latest GEMM
  };

  /// A contiguous host tensor holding `x` [B, R, C] row-major (trans = false) or as the
  /// transpose of a row-major [B, C, R] (trans = true).
  static at::Tensor host_layout(const at::Tensor& x, bool& trans, bool& copied) {
    trans = false;
    if (x.is_contiguous()) return x;
    if (x.transpose(1, 2).is_contiguous()) return trans = true, x.transpose(1, 2);
    copied = true;
    return x.contiguous();
  }

  void release(Staging& s) {
    if (s.dev) ops_->device_free(s.dev);
    if (s.host) ops_->host_free(s.host);
    s = Staging{};
  }
  /// Grows `s` (its device buffer too unless `host_only`) to `bytes`; in-flight work may still
  /// use the old buffers, so drain first. The old device buffer is freed before the new one is
  /// made, so growing counts once against the device budget.
  void reserve(Staging& s, std::size_t bytes, bool host_only = false) {
    const bool grow_host = bytes > s.host_bytes, grow_dev = !host_only && bytes > s.dev_bytes;
    if (!grow_host && !grow_dev) return;
    ops_->synchronize_all();
    if (grow_host) {
      if (s.host) ops_->host_free(s.host);
      s.host = nullptr, s.host_bytes = 0;
      s.host = ops_->host_alloc(bytes), s.host_bytes = bytes;
    }
    if (grow_dev) {
      if (s.dev) ops_->device_free(s.dev);
      s.dev = nullptr, s.dev_bytes = 0;
      s.dev = kept_.device_alloc(bytes), s.dev_bytes = bytes;
    }
  }

  /// Frees the kept operands that can never be asked for again: their host memory only the
  /// backend still references (no other handle to its tensor, no other tensor on its storage),
  /// or it was written since (a new version, e.g. a reused workspace buffer), so the key misses.
  void drop_dead_residents() {
    const auto dead = [](const auto& kv) {
      const Resident& r = kv.second;
      return (r.host.use_count() == 1 && r.host.storage().use_count() == 1) ||
             r.host._version() != std::get<2>(kv.first);
    };
    if (std::none_of(resident_.begin(), resident_.end(), dead)) return;
    ops_->synchronize_all();  // no queued upload or GEMM touches them
    for (auto it = resident_.begin(); it != resident_.end();) {
      if (!dead(*it)) {
        ++it;
        continue;
      }
      ops_->device_free(it->second.dev);
      resident_used_ -= std::int64_t(it->second.host.nbytes());
      it = resident_.erase(it);
    }
  }

  /// Device pointer of operand `x` (contiguous host tensor) for this call: resident if it is
  /// stable and was seen before or fits the residency budget, else staged in `slot`. Appends the
  /// event the GEMM must wait for.
  const void* device_operand(const at::Tensor& x, bool stable, int slot, int which,
                             std::vector<DeviceOps::Event>& waits) {
    const auto bytes = static_cast<std::size_t>(x.nbytes());
    const Key key{x.data_ptr(), x.nbytes(), x._version()};
    if (const auto it = stable ? resident_.find(key) : resident_.end(); it != resident_.end()) {
      if (it->second.ready != kNoEvent) waits.push_back(it->second.ready);
      it->second.last_call = call_;
      in_call_.push_back(it->second.dev);
      return it->second.dev;
    }
    if (stable) drop_dead_residents();
    // kept only where it fits the device budget without evicting anything; a kept operand is
    // uploaded straight into its own buffer, so it needs only the slot's pinned host buffer
    const bool keep = stable && resident_used_ + std::int64_t(bytes) <= options_.resident_bytes &&
                      (ops_->budget() == 0 || ops_->in_use() + std::int64_t(bytes) <= ops_->budget());
    Staging& st = in_[slot][which];
    reserve(st, bytes, keep);
    if (has_upload_[slot][which]) ops_->synchronize(upload_done_[slot][which]);  // pinned slot free
    parallel_memcpy(st.host, x.data_ptr(), bytes);
    void* dst = st.dev;
    if (keep) {
      dst = kept_.device_alloc(bytes);
      resident_used_ += std::int64_t(bytes);
    } else if (has_gemm_[slot]) {
      ops_->wait(Stream::copy_in, gemm_done_[slot]);  // device slot no longer read
    }
    ops_->copy_to_device(dst, st.host, bytes, Stream::copy_in);
    h2d_ += std::int64_t(bytes);
    const auto done = ops_->record(Stream::copy_in);
    upload_done_[slot][which] = done;
    has_upload_[slot][which] = true;
    if (keep) resident_[key] = Resident{dst, done, x, call_};
    waits.push_back(done);
    in_call_.push_back(dst);
    return dst;
  }

  /// The device buffer the GEMM writes for output `c`.
  void* output_buffer(const at::Tensor& c, bool accumulate, std::vector<DeviceOps::Event>& waits) {
    if (accumulate && open_.active && open_.dest.data_ptr() == c.data_ptr() && open_.dest.nbytes() == c.nbytes() &&
        open_.dest.sizes() == c.sizes())
      return out_[open_.slot].dev;  // keeps accumulating on the device
    close_output();
    const int slot = next_out_++ % 2;
    // Pending downloads into memory that c covers land first (older ones before newer), so
    // neither c's host contents (accumulate) nor this block's later unpacking are overtaken.
    finish_overlapping(c);
    finish_download(slot);  // the slot's previous block is unpacked and its buffers are free
    Staging& st = out_[slot];
    reserve(st, static_cast<std::size_t>(c.nbytes()));
    if (accumulate) {
      parallel_memcpy(st.host, c.data_ptr(), c.nbytes());
      ops_->copy_to_device(st.dev, st.host, c.nbytes(), Stream::copy_in);
      h2d_ += c.nbytes();
      waits.push_back(ops_->record(Stream::copy_in));
    }
    open_ = Open{true, c, slot};
    return st.dev;
  }

  /// Starts the download of the open output block (after its last GEMM).
  void close_output() {
    if (!open_.active) return;
    const int slot = open_.slot;
    ops_->wait(Stream::copy_out, open_.written != kNoEvent ? open_.written : ops_->record(Stream::compute));
    ops_->copy_to_host(out_[slot].host, out_[slot].dev, open_.dest.nbytes(), Stream::copy_out);
    d2h_ += open_.dest.nbytes();
    downloads_[slot] = Download{true, open_.dest, ops_->record(Stream::copy_out), downloads_issued_++};
    open_ = Open{};
  }

  /// Unpacks every pending download, oldest first.
  void finish_all() {
    const int first = downloads_[0].pending && downloads_[1].pending && downloads_[1].order < downloads_[0].order;
    finish_download(first);
    finish_download(1 - first);
  }
  /// Unpacks (oldest first) the pending downloads whose host destination overlaps `c`'s memory.
  void finish_overlapping(const at::Tensor& c) {
    const auto lo = static_cast<const char*>(c.data_ptr()), hi = lo + c.nbytes();
    bool overlap = false;
    for (const auto& d : downloads_) {
      if (!d.pending) continue;
      const auto dlo = static_cast<const char*>(d.dest.data_ptr()), dhi = dlo + d.dest.nbytes();
      overlap = overlap || (dlo < hi && lo < dhi);
    }
    if (overlap) finish_all();
  }

  /// Waits for the download of output slot `s` and unpacks it into its host tensor.
  void finish_download(int s) {
    Download& d = downloads_[s];
    if (!d.pending) return;
    ops_->synchronize(d.done);
    parallel_memcpy(d.dest.data_ptr(), out_[s].host, d.dest.nbytes());
    d = Download{};
  }

  std::unique_ptr<BudgetedDeviceOps> ops_;
  StagedGemmOptions options_;
  Staging in_[2][2];  ///< [slot][operand a/b]
  Staging out_[2];
  DeviceOps::Event upload_done_[2][2] = {{0, 0}, {0, 0}};
  bool has_upload_[2][2] = {{false, false}, {false, false}};
  DeviceOps::Event gemm_done_[2] = {0, 0};
  bool has_gemm_[2] = {false, false};
  Download downloads_[2];
  Open open_;
  std::map<Key, Resident> resident_;
  KeptBuffers kept_{*ops_};  ///< intermediates on the device (after ops_: destroyed before it)
  std::int64_t resident_used_ = 0;
  std::int64_t calls_ = 0;
  std::int64_t call_ = -1;  ///< the current (latest) call's number
  std::vector<const void*> in_call_;  ///< device buffers the current call's GEMM reads
  int next_out_ = 0;
  std::int64_t downloads_issued_ = 0;
  std::int64_t h2d_ = 0, d2h_ = 0;
};

}  // namespace

std::unique_ptr<GemmBackend> make_staged_backend(std::unique_ptr<DeviceOps> ops, StagedGemmOptions options) {
  return std::make_unique<StagedGemmBackend>(std::move(ops), options);
}

}  // namespace nnvmc::batching

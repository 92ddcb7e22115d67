// SPDX-License-Identifier: Apache-2.0
#include "algorithms/host_rings.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace loom::algo {

HostPlace hostPlace(const CollectiveShape& shape) {
  const HostLayout* layout = shape.hosts;
  if (layout == nullptr || layout->ranksPerHost() < 1 || layout->nranks() != shape.nranks) {
    throwInternal("hierarchical schedule without a uniform host layout of " + std::to_string(shape.nranks) + " ranks");
  }
  const size_t rank = static_cast<size_t>(shape.rank);
  return HostPlace{layout, layout->hosts(), layout->ranksPerHost(), layout->hostOf[rank], layout->localOf[rank]};
}

std::vector<size_t> unitRanks(const HostPlace& place) {
  std::vector<size_t> rankOf(static_cast<size_t>(place.hosts * place.local));
  for (int i = 0; i < place.hosts; ++i) {
    for (int j = 0; j < place.local; ++j) {
      rankOf[static_cast<size_t>(i * place.local + j)] = static_cast<size_t>(place.rankAt(i, j));
    }
  }
  return rankOf;
}

PhaseRing ringWithinHost(const HostPlace& place) {
  return PhaseRing{place.local, place.index, place.rankAt(place.host, place.index - 1),
                   place.rankAt(place.host, place.index + 1)};
}

PhaseRing ringAcrossHosts(const HostPlace& place) {
  return PhaseRing{place.hosts, place.host, place.rankAt(place.host - 1, place.index),
                   place.rankAt(place.host + 1, place.index)};
}

UnitRings::UnitRings(const CollectiveShape& shape, const HostPlace& place, std::vector<size_t> unitBytes, Offset offset)
    : builder_(shape), local_(place.local), hosts_(place.hosts), bytes_(std::move(unitBytes)),
      offset_(std::move(offset)) {
  where_.assign(bytes_.size(), Buffer::Send);
  producer_.resize(bytes_.size());
  for (size_t u = 0; u < bytes_.size(); ++u) producer_[u].assign(builder_.pieceCount(bytes_[u]), -1);
}

int UnitRings::unit(int host, int index) const {
  return ((host % hosts_) + hosts_) % hosts_ * local_ + ((index % local_) + local_) % local_;
}

std::vector<int> UnitRings::column(int index, int firstHost) const {
  std::vector<int> units;
  for (int t = 0; t < hosts_; ++t) units.push_back(unit(firstHost - t, index));
  return units;
}

Range UnitRings::piece(Buffer buffer, int unit, size_t index) const {
  return builder_.piece(buffer, offset_(buffer, unit), bytes_[static_cast<size_t>(unit)], index);
}

namespace {
// Every piece of `units`, in order, as (unit, piece).
std::vector<std::pair<int, size_t>> piecesOf(const std::vector<int>& units, const ScheduleBuilder& builder,
                                             const std::vector<size_t>& bytes) {
  std::vector<std::pair<int, size_t>> pieces;
  for (int u : units) {
    for (size_t p = 0; p < builder.pieceCount(bytes[static_cast<size_t>(u)]); ++p) pieces.emplace_back(u, p);
  }
  return pieces;
}
}  // namespace

void UnitRings::reduceScatter(const PhaseRing& ring, const Items& items, Buffer partial, Buffer last) {
  for (int s = 0; s < ring.n - 1; ++s) {
    const std::vector<int> sent = items(ring.position - s - 1);
    const std::vector<int> received = items(ring.position - s - 2);
    const auto sends = piecesOf(sent, builder_, bytes_);
    const auto receives = piecesOf(received, builder_, bytes_);
    const Buffer into = s == ring.n - 2 ? last : partial;
    for (size_t k = 0; k < std::max(sends.size(), receives.size()); ++k) {
      if (k < sends.size()) {
        const auto [u, p] = sends[k];
        Step send{StepKind::Send, ring.right, {}, piece(where_[static_cast<size_t>(u)], u, p)};
        send.dependsOn = producer_[static_cast<size_t>(u)][p];
        builder_.add(send);
      }
      if (k < receives.size()) {
        const auto [u, p] = receives[k];
        const Buffer local = where_[static_cast<size_t>(u)];
        Step reduce{StepKind::RecvReduce, ring.left, piece(into, u, p), piece(local, u, p)};
        // This rank's raw input (step 0 also brings the left neighbour's), or a partial sum
        // this rank holds already: the same on both sides of the link, by symmetry.
        reduce.rawIncoming = s == 0 && local == Buffer::Send;
        reduce.partialLocal = local != Buffer::Send;
        reduce.dependsOn = producer_[static_cast<size_t>(u)][p];  // the local operand is there
        producer_[static_cast<size_t>(u)][p] = builder_.add(reduce);
      }
    }
    for (int u : received) where_[static_cast<size_t>(u)] = into;
  }
}

void UnitRings::allGather(const PhaseRing& ring, const Items& items, Buffer into) {
  for (int s = 0; s < ring.n - 1; ++s) {
    const std::vector<int> received = items(ring.position - s - 1);
    const auto sends = piecesOf(items(ring.position - s), builder_, bytes_);
    const auto receives = piecesOf(received, builder_, bytes_);
    for (size_t k = 0; k < std::max(sends.size(), receives.size()); ++k) {
      if (k < sends.size()) {
        const auto [u, p] = sends[k];
        Step send{StepKind::Send, ring.right, {}, piece(where_[static_cast<size_t>(u)], u, p)};
        send.dependsOn = producer_[static_cast<size_t>(u)][p];
        builder_.add(send);
      }
      if (k < receives.size()) {
        // What the receive overwrites left this rank (sent on) before the final value could
        // come back around: no dependency, as in the flat ring.
        const auto [u, p] = receives[k];
        producer_[static_cast<size_t>(u)][p] = builder_.add(Step{StepKind::Recv, ring.left, piece(into, u, p), {}});
      }
    }
    for (int u : received) where_[static_cast<size_t>(u)] = into;
  }
}

void UnitRings::divide(int unit) {
  const size_t u = static_cast<size_t>(unit);
  for (size_t p = 0; p < producer_[u].size(); ++p) {
    Step divide{StepKind::Divide, -1, piece(where_[u], unit, p), {}};
    divide.dependsOn = producer_[u][p];
    producer_[u][p] = builder_.add(divide);
  }
}

}  // namespace loom::algo

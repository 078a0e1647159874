#include "dist/communicator.h"

#include <fmt/format.h>

#include <algorithm>

namespace llms {

Status LocalCommunicator::gather(std::span<const float> mine, std::span<const int64_t> /*counts*/, float* all) {
  std::copy(mine.begin(), mine.end(), all);
  return ok_status();
}

Status LocalCommunicator::allgather(std::span<const uint8_t> mine, std::vector<uint8_t>& all) {
  all.assign(mine.begin(), mine.end());
  return ok_status();
}

Status LocalCommunicator::send(int dest, std::span<const float> /*data*/) {
  return internal_error(fmt::format("a single process has no rank {} to send to", dest));
}

Status LocalCommunicator::recv(int source, std::span<float> /*data*/) {
  return internal_error(fmt::format("a single process has no rank {} to receive from", source));
}

Result<std::unique_ptr<Communicator>> LocalCommunicator::split(int /*color*/, int /*key*/) {
  return std::unique_ptr<Communicator>(new LocalCommunicator());
}

LocalCommunicator& LocalCommunicator::instance() {
  static LocalCommunicator local;
  return local;
}

}  // namespace llms

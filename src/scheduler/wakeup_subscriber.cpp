#include "scheduler/wakeup_subscriber.h"

#include <charconv>
#include <chrono>
#include <vector>

#include "baton/task.h"
#include "broker/keys.h"
#include "broker/partitions.h"
#include "core/backoff.h"

namespace baton::internal {

namespace {

constexpr int kPollMs = 100;  // how often the listening thread checks for Stop()

}  // namespace

bool ParseTypeMessage(std::string_view text, TypeRef* out) {
  std::size_t bar = text.find('|');
  if (bar == std::string_view::npos) return false;
  std::string_view ns = text.substr(0, bar);
  std::string_view type = text.substr(bar + 1);
  if (!IsValidStorageNamespace(ns) || !IsValidName(type)) return false;
  out->ns = std::string(ns);
  out->type = std::string(type);
  return true;
}

bool ParseWakeupMessage(std::string_view text, WakeupMessage* out) {
  std::size_t last = text.rfind('|');
  if (last == std::string_view::npos) return false;
  TypeRef ref;
  if (!ParseTypeMessage(text.substr(0, last), &ref)) return false;
  std::string_view digits = text.substr(last + 1);
  std::int64_t due = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), due);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty()) return false;
  out->ns = std::move(ref.ns);
  out->type = std::move(ref.type);
  out->due_ms = due;
  return true;
}

WakeupSubscriber::WakeupSubscriber(RedisEndpoint endpoint, Handlers handlers, LogFn log)
    : endpoint_(std::move(endpoint)), handlers_(std::move(handlers)), log_(std::move(log)) {}

WakeupSubscriber::~WakeupSubscriber() { Stop(); }

Status WakeupSubscriber::Subscribe() {
  sub_.reset();
  std::vector<std::string> channels = {std::string(Keys::kWakeupChannel)};
  if (handlers_.on_type) channels.emplace_back(Keys::kTypesChannel);
  StatusOr<std::unique_ptr<Subscription>> opened = Subscription::Open(endpoint_, channels);
  if (!opened.ok()) return opened.status().WithContext("subscriber");
  sub_ = std::move(*opened);
  return Status::Ok();
}

Status WakeupSubscriber::Start() {
  stopping_ = false;
  Status first = Subscribe();
  thread_ = std::thread([this, first] { Loop(first); });
  return first;
}

void WakeupSubscriber::Stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void WakeupSubscriber::Dispatch(std::string_view channel, std::string_view payload) {
  if (channel == Keys::kWakeupChannel) {
    WakeupMessage msg;
    if (handlers_.on_wakeup && ParseWakeupMessage(payload, &msg)) handlers_.on_wakeup(msg);
  } else if (channel == Keys::kTypesChannel) {
    TypeRef ref;
    if (handlers_.on_type && ParseTypeMessage(payload, &ref)) handlers_.on_type(ref);
  }
}

void WakeupSubscriber::Loop(const Status& first) {
  Backoff backoff;
  OutageLog outage("subscriber");
  // When the first subscribe failed, on_resubscribed runs once a later one works.
  if (!first.ok()) outage.Failed(log_, first, backoff.Peek());
  while (!stopping_) {
    if (sub_ == nullptr) {
      // Sleep the backoff in small steps so Stop() stays prompt.
      auto until = std::chrono::steady_clock::now() + backoff.Next();
      while (!stopping_ && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (stopping_) break;
      if (!Subscribe().ok()) continue;
      backoff.Reset();
      outage.Succeeded(log_);
      if (handlers_.on_resubscribed) handlers_.on_resubscribed();
      continue;
    }
    // Wait in short steps, so the thread sees Stop().
    StatusOr<std::vector<PubSubMessage>> messages = sub_->Wait(std::chrono::milliseconds(kPollMs));
    if (!messages.ok()) {
      outage.Failed(log_, messages.status().WithContext("subscriber"), backoff.Peek());
      sub_.reset();
      continue;
    }
    for (const PubSubMessage& m : *messages) Dispatch(m.channel, m.payload);
  }
}

}  // namespace baton::internal

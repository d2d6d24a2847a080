#include "cli/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sparsejit::cli {

namespace {

// Erases the terminal line the cursor is on: back to its start, then clear to its end.
constexpr const char* kEraseLine = "\r\033[K";

// The terminal's width, read at each draw so a resized window is followed; 80 when unknown.
std::size_t terminal_columns() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Columns of UTF-8 text, one per code point (the lines hold no wide characters but what an
// item's name may bring).
std::size_t columns_of(const std::string& text) {
  return std::size_t(std::count_if(text.begin(), text.end(), [](char c) { return !continuation_byte(c); }));
}

// The last `columns` code points of `text`.
std::string last_columns(const std::string& text, std::size_t columns) {
  std::size_t start = text.size();
  for (std::size_t kept = 0; kept < columns && start > 0;) {
    --start;
    if (!continuation_byte(text[start])) ++kept;
  }
  return text.substr(start);
}

double seconds_between(Progress::Clock::time_point from, Progress::Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

std::string format_duration(double seconds) {
  // Clamped above as well: llround of a value past int64 is undefined.
  const long long s = seconds > 0 ? std::llround(std::min(seconds, 1e12)) : 0;
  char text[32];
  if (s < 60) std::snprintf(text, sizeof text, "%llds", s);
  else if (s < 3600) std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  return text;
}

std::optional<double> eta_seconds(double elapsed_s, double done_weight, double total_weight) {
  if (!(done_weight > 0)) return std::nullopt;
  return elapsed_s / done_weight * std::max(0.0, total_weight - done_weight);
}

bool next_item_fits(double elapsed_s, double done_weight, double limit_s) {
  if (!(elapsed_s < limit_s)) return false;
  if (!(done_weight > 0)) return true;
  return elapsed_s + elapsed_s / done_weight <= limit_s;
}

std::string progress_line(int64_t done, int64_t total, const std::string& item, double elapsed_s,
                          std::optional<double> eta_s, std::size_t columns) {
  const int64_t percent = total > 0 ? done * 100 / total : 100;
  const std::string head = "[" + std::to_string(done) + "/" + std::to_string(total) + "] " + std::to_string(percent) + "% ";
  std::string tail = " · elapsed " + format_duration(elapsed_s);
  if (eta_s) tail += " · ETA " + format_duration(*eta_s);
  std::string shown = item;
  // One column short of the width: a line that fills the last column wraps on some terminals.
  const std::size_t fixed = columns_of(head) + columns_of(tail);
  if (columns > 0 && fixed + columns_of(item) + 1 > columns) {
    const std::size_t room = columns > fixed + 1 ? columns - fixed - 1 : 0;
    shown = room > 1 ? "…" + last_columns(item, room - 1) : "";
  }
  return head + shown + tail;
}

bool log_line_due(int64_t done, int64_t total, int64_t done_then, double seconds_since) {
  if (done >= total || seconds_since >= kLogSeconds) return true;
  return total > 0 && done * 10 / total > done_then * 10 / total;
}

ProgressStyle progress_style(bool quiet) {
  if (quiet) return ProgressStyle::Off;
  return isatty(STDERR_FILENO) ? ProgressStyle::Terminal : ProgressStyle::Log;
}

Progress::Progress(int64_t items, double total_weight, ProgressStyle style, std::ostream& out, Clock::time_point start)
    : items_(items), total_weight_(total_weight), style_(style), out_(out), start_(start), last_line_(start) {}

Progress::~Progress() {
  if (!drawn_.empty()) out_ << "\n" << std::flush;
}

void Progress::finished(const std::string& item, double weight) {
  ++done_;
  done_weight_ += weight;
  show(item);
}

bool Progress::next_item_fits(double limit_s) const {
  return cli::next_item_fits(seconds_between(start_, Clock::now()), done_weight_, limit_s);
}

void Progress::skipped(int64_t items, double weight, const std::string& item) {
  done_ += items;
  total_weight_ -= weight;
  show(item);
}

void Progress::print(std::ostream& to, const std::string& line) {
  if (!drawn_.empty()) out_ << kEraseLine << std::flush;
  to << line << std::endl;
  if (!drawn_.empty()) out_ << drawn_ << std::flush;
}

void Progress::show(const std::string& item) {
  if (style_ == ProgressStyle::Off || items_ <= 0) return;
  const Clock::time_point now = Clock::now();
  const double elapsed = seconds_between(start_, now);
  const std::optional<double> eta = eta_seconds(elapsed, done_weight_, total_weight_);
  if (style_ == ProgressStyle::Terminal) {
    drawn_ = progress_line(done_, items_, item, elapsed, eta, terminal_columns());
    out_ << kEraseLine << drawn_;
    if (done_ >= items_) {  // the last line stays, and what follows starts below it
      out_ << "\n";
      drawn_.clear();
    }
    out_ << std::flush;
    return;
  }
  if (!log_line_due(done_, items_, done_at_last_line_, seconds_between(last_line_, now))) return;
  out_ << progress_line(done_, items_, item, elapsed, eta) << "\n" << std::flush;
  last_line_ = now;
  done_at_last_line_ = done_;
}

}  // namespace sparsejit::cli

// Progress of a command that works through a known list of items (`bench`: matrices × K, or
// SpAMM's cases; `tune`: training cases), shown on stderr with the time elapsed and an ETA:
//
//   [12/40] 30% cyl6 k=128 · elapsed 1m02s · ETA 2m25s
//
// On a terminal one line is rewritten in place ('\r'); in a log (stderr a file or a pipe) whole
// lines, but only when kLogSeconds have passed or another tenth of the items is done since the
// last one, and always the last, so a long run's log stays short. --quiet turns it off.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace sparsejit::cli {

// A log gets a line at most this often, unless another tenth of the items is done.
constexpr double kLogSeconds = 5;

// "0s", "59s", "1m00s", "1h02m": whole seconds (rounded) under a minute, minutes and seconds
// under an hour, hours and minutes from there. Negative or NaN reads as 0s.
std::string format_duration(double seconds);

// Seconds left when `done_weight` of `total_weight` took `elapsed_s`: the mean time per unit of
// weight so far times the weight left (each item weighs 1 where nothing better predicts its
// cost). nullopt while nothing is done: there is no mean yet.
std::optional<double> eta_seconds(double elapsed_s, double done_weight, double total_weight);

// Whether another item may start under a time limit of `limit_s`: not once `elapsed_s` has
// reached it, and otherwise when the mean time per unit of weight so far says one more unit
// ends by then (the first item starts while there is no mean yet). Items that take longer than
// the mean can still end past the limit; a caller with a hard limit keeps a margin.
bool next_item_fits(double elapsed_s, double done_weight, double limit_s);

// "[12/40] 30% ITEM · elapsed 1m02s · ETA 2m25s" (no ETA part when `eta_s` is nullopt). With
// `columns` > 0 the line is kept under that many columns by shortening ITEM from the left
// ("…ices/cyl6 k=128"): a terminal line that wraps can no longer be rewritten with '\r'.
std::string progress_line(int64_t done, int64_t total, const std::string& item, double elapsed_s,
                          std::optional<double> eta_s, std::size_t columns = 0);

// Whether a log gets a line now that `done` of `total` items are done, `seconds_since` after
// the last line, which was written at `done_then`: the last item, kLogSeconds passed, or the
// done share reached another tenth.
bool log_line_due(int64_t done, int64_t total, int64_t done_then, double seconds_since);

enum class ProgressStyle {
  Off,       // --quiet
  Terminal,  // one line rewritten in place
  Log,       // whole lines, throttled (log_line_due)
};

// Off when `quiet`, Terminal when stderr is a terminal, else Log.
ProgressStyle progress_style(bool quiet);

class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  // `items` to do, weighing `total_weight` in all (the count where each weighs 1), shown on
  // `out`; elapsed time counts from `start` (a caller that learns the count only after the
  // work began passes the time it began).
  Progress(int64_t items, double total_weight, ProgressStyle style, std::ostream& out, Clock::time_point start = Clock::now());
  ~Progress();  // ends a terminal line left open (a run cut short by an error)
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // An item finished, measured or failed: counted, and its time goes into the mean.
  void finished(const std::string& item, double weight = 1);
  // `items` that ended without doing their work (a matrix that did not load, or is skipped):
  // counted, and their weight taken out of the total, so the mean is of work actually done.
  void skipped(int64_t items, double weight, const std::string& item);
  // `line` and a newline on `to` (stdout or stderr): on a terminal the progress line is erased
  // first and drawn again after, so that other output never lands inside it.
  void print(std::ostream& to, const std::string& line);

  int64_t done() const { return done_; }
  int64_t items() const { return items_; }
  // next_item_fits over this run's time and work so far.
  bool next_item_fits(double limit_s) const;

 private:
  void show(const std::string& item);

  int64_t items_;
  double total_weight_;
  ProgressStyle style_;
  std::ostream& out_;
  Clock::time_point start_;
  int64_t done_ = 0;
  double done_weight_ = 0;
  std::string drawn_;  // the terminal line shown now ("" when none is open)
  Clock::time_point last_line_;  // Log: when the last line was written, and at which count
  int64_t done_at_last_line_ = 0;
};

}  // namespace sparsejit::cli

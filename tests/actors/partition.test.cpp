#include "tests/actors/partition_fixture.hpp"

using namespace moonmq;
using namespace moonmq::test::partitions;
using namespace std::chrono_literals;

TEST_CASE("partition appends answer base offsets in order", "[partition]") {
  fixture f;
  auto p = f.spawn("a");
  CHECK(f.ask_int(p, append_atom::value, batch_of(3, "x"), true) == 0);
  CHECK(f.ask_int(p, append_atom::value, batch_of(2, "y"), false) == 3);
  auto [bytes, lo, hi] = f.read(p, 0);
  CHECK(lo == 0);
  CHECK(hi == 5);
  CHECK_FALSE(bytes.empty());
}

TEST_CASE("a copy keeps offsets: reset to the source's log start, then append its batches", "[partition]") {
  fixture f;
  auto src = f.spawn("src");
  for (int i = 0; i < 4; ++i)
    f.ask_int(src, append_atom::value, batch_of(5, "r" + std::to_string(i) + "-"), true);
  auto dst = f.spawn("dst");
  CHECK(f.ask_int(dst, reset_atom::value, int64_t{7}) == 7);
  // Copy from offset 10 (a batch boundary) onwards: the destination must
  // first be reset to start exactly there.
  CHECK(f.ask_int(dst, reset_atom::value, int64_t{10}) == 10);
  auto [bytes, lo, hi] = f.read(src, 10);
  CHECK(hi == 20);
  // A copy that serves producers never takes copied batches: only a sealed
  // one (a move's destination, sealed by its ensure) does.
  caf::error unsealed;
  f.self->request(dst, 10s, copy_atom::value, bytes, true).receive([](int64_t) {}, [&](caf::error& e) { unsealed = e; });
  CHECK(error_code_of(unsealed) == "invalid_request");
  CHECK(std::get<2>(f.read(dst, 10)) == 10);
  CHECK(f.ask_int(dst, seal_atom::value, true, true) == 10);
  CHECK(f.ask_int(dst, copy_atom::value, bytes, true) == 20);
  // Until the move confirms, clients read nothing from the copy (it may be
  // incomplete): a retriable partition_moved.
  caf::error early;
  f.self->request(dst, 10s, read_atom::value, int64_t{10}, int32_t{1 << 20})
    .receive([](std::string&, int64_t, int64_t) {}, [&](caf::error& e) { early = e; });
  CHECK(error_code_of(early) == "partition_moved");
  // Copying the same batches again is an offset gap, refused.
  caf::error err;
  f.self->request(dst, 10s, copy_atom::value, bytes, true).receive([](int64_t) {}, [&](caf::error& e) { err = e; });
  CHECK(error_code_of(err) == "invalid_request");
  // Confirmed (unsealed): the copied batches read back as sent, and new
  // produce continues after the copied offsets; a plain seal takes no copies.
  CHECK(f.ask_int(dst, seal_atom::value, false) == 20);
  auto [copied, dlo, dhi] = f.read(dst, 10);
  CHECK(dlo == 10);
  CHECK(dhi == 20);
  CHECK(copied == bytes);
  CHECK(f.ask_int(dst, seal_atom::value, true) == 20);
  caf::error plain;
  f.self->request(dst, 10s, copy_atom::value, bytes, true).receive([](int64_t) {}, [&](caf::error& e) { plain = e; });
  CHECK(error_code_of(plain) == "invalid_request");
  CHECK(f.ask_int(dst, seal_atom::value, false) == 20);
  CHECK(f.ask_int(dst, append_atom::value, batch_of(1, "new"), true) == 20);
}

TEST_CASE("a copy at an expected offset is applied in offset order: one that arrives ahead waits for its turn",
          "[partition]") {
  fixture f;
  auto src = f.spawn("src");
  for (int i = 0; i < 4; ++i)
    f.ask_int(src, append_atom::value, batch_of(5, "r" + std::to_string(i) + "-"), true);
  // The four batches one by one (a read returns at least one whole batch).
  std::vector<std::string> b;
  for (int64_t at = 0; at < 20; at += 5) {
    std::string one;
    f.self->request(src, 10s, read_atom::value, at, int32_t{1})
      .receive([&](std::string& bytes, int64_t, int64_t) { one = std::move(bytes); },
               [&](caf::error& e) { FAIL("read failed: " << caf::to_string(e)); });
    b.push_back(one);
  }
  auto dst = f.spawn("dst");
  CHECK(f.ask_int(dst, seal_atom::value, true, true) == 0);
  auto error_of = [&](const partition_actor& to, int64_t expected, const std::string& bytes) {
    caf::error err;
    f.self->request(to, 10s, copy_atom::value, expected, bytes, false)
      .receive([](int64_t) { FAIL("applied"); }, [&](caf::error& e) { err = e; });
    return err;
  };
  // Batches 2 and 1 arrive first (sent, not awaited): both are held.
  f.self->send(dst, copy_atom::value, int64_t{10}, b[2], false);
  f.self->send(dst, copy_atom::value, int64_t{5}, b[1], false);
  // An empty list never waits, and nothing is held twice at one offset.
  int64_t lo = -1, hi = -1;
  CHECK(out_of_range_bounds(error_of(dst, 12, ""), lo, hi));
  CHECK(hi == 0);
  CHECK(out_of_range_bounds(error_of(dst, 10, b[2]), lo, hi));
  CHECK(std::get<2>(f.read(src, 0)) == 20);
  // Batch 0 lands at the log end; the held ones follow it in offset order.
  CHECK(f.ask_int(dst, copy_atom::value, int64_t{0}, b[0], true) == 5);
  std::vector<int64_t> answered;
  for (int i = 0; i < 2; ++i)
    f.self->receive([&](int64_t end) { answered.push_back(end); },
                    [&](caf::error& e) { FAIL("held copy failed: " << caf::to_string(e)); });
  std::sort(answered.begin(), answered.end());
  CHECK(answered == std::vector<int64_t>{10, 15});
  CHECK(f.ask_int(dst, copy_atom::value, int64_t{15}, b[3], true) == 20);
  // Sent again (a retry after a lost answer): behind the log end, refused
  // with the bounds, and the copy reads back exactly as the source.
  CHECK(out_of_range_bounds(error_of(dst, 15, b[3]), lo, hi));
  CHECK(hi == 20);
  CHECK(f.ask_int(dst, seal_atom::value, false) == 20);
  CHECK(std::get<0>(f.read(dst, 0)) == std::get<0>(f.read(src, 0)));

  // A held list whose gap never fills is answered when the copy is reset.
  auto again = f.spawn("again");
  CHECK(f.ask_int(again, seal_atom::value, true, true) == 0);
  f.self->send(again, copy_atom::value, int64_t{5}, b[1], false);
  CHECK(f.ask_int(again, reset_atom::value, int64_t{0}) == 0);
  bool refused = false;
  f.self->receive([](int64_t) { FAIL("a held copy was applied after a reset"); },
                  [&](caf::error& e) { refused = out_of_range_bounds(e, lo, hi); });
  CHECK(refused);
  // At most 16 wait; the next is refused at once.
  for (int64_t k = 1; k <= 16; ++k)
    f.self->send(again, copy_atom::value, 100 * k, b[1], false);
  CHECK(out_of_range_bounds(error_of(again, 5000, b[1]), lo, hi));
}

TEST_CASE("a durable seal survives a restart of the partition, a plain seal and an unseal do not", "[partition]") {
  fixture f;
  auto p = f.spawn("d");
  f.ask_int(p, append_atom::value, batch_of(2, "a"), true);
  CHECK(f.ask_int(p, seal_atom::value, true, true) == 2);
  auto restart = [&](partition_actor& a) {
    f.self->send_exit(a, caf::exit_reason::user_shutdown);
    f.self->wait_for(a);
    a = f.spawn("d");
  };
  // A move's destination copy restarted between cutover and confirm must not
  // start serving its incomplete log.
  restart(p);
  CHECK(error_code_of(f.ask_error(p, batch_of(1, "b"))) == "partition_moved");
  CHECK(f.ask_int(p, seal_atom::value, false) == 2);
  restart(p);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), true) == 2);
  CHECK(f.ask_int(p, seal_atom::value, true) == 3);  // the source's seal at cutover: memory only
  restart(p);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "e"), true) == 3);
}

TEST_CASE("a sealed partition refuses produce but serves reads, unsealing resumes", "[partition]") {
  fixture f;
  auto p = f.spawn("s");
  f.ask_int(p, append_atom::value, batch_of(2, "a"), true);
  CHECK(f.ask_int(p, seal_atom::value, true) == 2);
  auto err = f.ask_error(p, batch_of(1, "b"));
  CHECK(error_code_of(err) == "partition_moved");
  CHECK(http_status_of(err) == 503);
  CHECK(std::get<2>(f.read(p, 0)) == 2);
  CHECK(f.ask_int(p, seal_atom::value, false) == 2);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), true) == 2);
}

TEST_CASE("an invalid batch is refused with invalid_request and nothing is appended", "[partition]") {
  fixture f;
  auto p = f.spawn("bad");
  auto batch = batch_of(2, "z");
  batch[30] = static_cast<char>(batch[30] ^ 0x5a);  // inside the CRC-covered part
  CHECK(error_code_of(f.ask_error(p, batch)) == "invalid_request");
  CHECK(std::get<2>(f.read(p, 0)) == 0);
}

TEST_CASE("reading outside the log is offset_out_of_range with both bounds", "[partition]") {
  fixture f;
  auto p = f.spawn("oor");
  f.ask_int(p, append_atom::value, batch_of(3, "a"), true);
  caf::error err;
  f.self->request(p, 10s, read_atom::value, int64_t{9}, int32_t{100})
    .receive([](std::string&, int64_t, int64_t) {}, [&](caf::error& e) { err = e; });
  int64_t lo = -1, hi = -1;
  REQUIRE(out_of_range_bounds(err, lo, hi));
  CHECK(lo == 0);
  CHECK(hi == 3);
}

TEST_CASE("delete records advances the log start durably, out of range, sealed and bad offsets are refused",
          "[partition][delete_records]") {
  fixture f;
  auto p = f.spawn("dr");
  f.ask_int(p, append_atom::value, batch_of(3, "a"), false);  // 0..2, acks=none: not synced yet
  f.ask_int(p, append_atom::value, batch_of(3, "b"), false);  // 3..5
  auto refused = [&](int64_t before, bool sealed_ok) {
    caf::error err;
    f.self->request(p, 10s, delete_records_atom::value, before, sealed_ok)
      .receive([](int64_t) { FAIL("accepted"); }, [&](caf::error& e) { err = e; });
    return err;
  };
  int64_t lo = -1, hi = -1;
  REQUIRE(out_of_range_bounds(refused(7, false), lo, hi));
  CHECK(lo == 0);
  CHECK(hi == 6);
  CHECK(error_code_of(refused(-2, false)) == "invalid_request");
  CHECK(f.ask_int(p, delete_records_atom::value, int64_t{4}, false) == 4);  // inside the second batch
  CHECK(f.ask_int(p, delete_records_atom::value, int64_t{1}, false) == 4);  // below: unchanged
  CHECK(std::get<1>(f.read(p, 4)) == 4);
  caf::error below;
  f.self->request(p, 10s, read_atom::value, int64_t{3}, int32_t{100})
    .receive([](std::string&, int64_t, int64_t) {}, [&](caf::error& e) { below = e; });
  REQUIRE(out_of_range_bounds(below, lo, hi));
  CHECK(lo == 4);
  // A sealed partition refuses a client's request, not a move's confirm.
  CHECK(f.ask_int(p, seal_atom::value, true) == 6);
  CHECK(error_code_of(refused(5, false)) == "partition_moved");
  CHECK(f.ask_int(p, delete_records_atom::value, int64_t{5}, true) == 5);
  CHECK(f.ask_int(p, seal_atom::value, false) == 6);
  // The log start survives a restart of the partition.
  f.self->send_exit(p, caf::exit_reason::user_shutdown);
  f.self->wait_for(p);
  p = f.spawn("dr");
  CHECK(std::get<1>(f.read(p, 5)) == 5);
  CHECK(f.ask_int(p, delete_records_atom::value, int64_t{-1}, false) == 6);
  CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), true) == 6);
}

TEST_CASE("partitions sharing one I/O worker all get their durable appends answered, and keep them across a restart",
          "[partition][io_worker]") {
  fixture f;
  f.io = spawn_io_pool(f.sys, io_of(1, 0));
  constexpr int n = 40;
  std::vector<partition_actor> parts;
  for (int i = 0; i < n; ++i)
    parts.push_back(f.spawn("many", -1, i));
  // Every append is in flight before any answer is read, so the worker's
  // rounds take many partitions at once (one syncfs each).
  for (int round = 0; round < 3; ++round) {
    using handle = decltype(f.self->request(parts[0], 10s, append_atom::value, std::string{}, true));
    std::vector<handle> pending;
    for (int i = 0; i < n; ++i)
      pending.push_back(f.self->request(parts[static_cast<size_t>(i)], 10s, append_atom::value, batch_of(2, "r"), true));
    for (auto& h : pending) {
      int64_t base = -1;
      h.receive([&](int64_t b) { base = b; }, [&](caf::error& e) { FAIL("append failed: " << caf::to_string(e)); });
      CHECK(base == 2 * round);
    }
  }
  for (auto& p : parts) {
    auto s = f.status(p);
    CHECK(s["durable_offset"] == 6);
    CHECK(s["pending_acks"] == 0);
    CHECK(s["io_worker"] == 0);
  }
  for (auto& p : parts) {
    f.self->send_exit(p, caf::exit_reason::user_shutdown);
    f.self->wait_for(p);
  }
  f.spawned.clear();
  for (int i = 0; i < n; i += 7) {
    auto p = f.spawn("many", -1, i);
    CHECK(std::get<2>(f.read(p, 0)) == 6);
  }
}

TEST_CASE("partitions past the open-file budget release their idle segment files and still serve",
          "[partition][io_worker]") {
  fixture f;
  f.io = spawn_io_pool(f.sys, io_of(1, 2));  // one worker, two files
  constexpr int n = 10;
  std::vector<partition_actor> parts;
  for (int i = 0; i < n; ++i) {
    parts.push_back(f.spawn("fds", -1, i));
    f.ask_int(parts.back(), append_atom::value, batch_of(3, "a"), true);
  }
  auto open_files = [&] {
    int open = 0;
    for (auto& p : parts)
      open += f.status(p)["file_open"].get<bool>() ? 1 : 0;
    return open;
  };
  CHECK(open_files() <= 2);
  for (int i = 0; i < n; ++i) {
    CHECK(std::get<2>(f.read(parts[static_cast<size_t>(i)], 0)) == 3);
    CHECK(f.ask_int(parts[static_cast<size_t>(i)], append_atom::value, batch_of(1, "b"), true) == 3);
  }
  CHECK(open_files() <= 2);
  for (auto& p : parts)
    CHECK(std::get<2>(f.read(p, 0)) == 4);
  // acks=none leaves the logs unsynced: the budget syncs them before their
  // files close.
  for (auto& p : parts)
    CHECK(f.ask_int(p, append_atom::value, batch_of(1, "c"), false) == 4);
  CHECK(open_files() <= 2);
  for (auto& p : parts) {
    auto s = f.status(p);
    CHECK(s["log_end_offset"] == 5);
    CHECK(std::get<2>(f.read(p, 0)) == 5);
  }
}

// append_direct (actors/direct_append.hpp): appends handed straight to the
// I/O workers keep each partition's order across calls, are answered once
// durable, and fail (never acknowledged) on a partition that is gone.

TEST_CASE("direct appends of consecutive calls reach every partition in call order", "[partition][direct_append]") {
  fixture f;
  constexpr int partitions = 12;
  constexpr int calls = 40;
  std::vector<partition_actor> parts;
  for (int i = 0; i < partitions; ++i)
    parts.push_back(f.spawn("spread", -1, i));
  answers a;
  // Every call spans both workers; nothing waits between calls, so each
  // worker's mailbox holds many calls at once (and its rounds many
  // partitions).
  for (int c = 0; c < calls; ++c) {
    std::vector<direct_append> appends;
    for (int i = 0; i < partitions; ++i)
      appends.push_back(a.make(parts[static_cast<size_t>(i)], batch_of(2, "c" + std::to_string(c) + "-"),
                               (c + i) % 3 != 0, std::to_string(i) + "/" + std::to_string(c)));
    append_direct(f.sys, std::move(appends), 10s);
  }
  REQUIRE(a.wait_for(partitions * calls));
  CHECK(a.errors.empty());
  for (int i = 0; i < partitions; ++i)
    for (int c = 0; c < calls; ++c)
      CHECK(a.bases[std::to_string(i) + "/" + std::to_string(c)] == 2 * c);
  for (auto& p : parts) {
    auto v = f.values(p);
    REQUIRE(v.size() == 2 * calls);
    for (int c = 0; c < calls; ++c) {
      CHECK(v[static_cast<size_t>(2 * c)] == "c" + std::to_string(c) + "-0");
      CHECK(v[static_cast<size_t>(2 * c + 1)] == "c" + std::to_string(c) + "-1");
    }
  }
}

TEST_CASE("a durable direct append is answered only once its sync round made it durable", "[partition][direct_append]") {
  fixture f;
  auto p = f.spawn("durable", -1, 0);
  answers a;
  append_direct(f.sys, {a.make(p, batch_of(3, "d"), true, "one")}, 10s);
  REQUIRE(a.wait_for(1));
  CHECK(a.bases["one"] == 0);
  nlohmann::json status;
  f.self->request(p, 10s, status_atom::value).receive([&](std::string& s) { status = nlohmann::json::parse(s); },
                                                      [&](caf::error& e) { FAIL(caf::to_string(e)); });
  CHECK(status["durable_offset"] == 3);
  CHECK(status["pending_acks"] == 0);
}

TEST_CASE("direct appends to a sealed, a deleted or an exited partition fail and append nothing",
          "[partition][direct_append]") {
  fixture f;
  auto sealed = f.spawn("gone", -1, 0);
  auto deleted = f.spawn("gone", -1, 1);
  auto exited = f.spawn("gone", -1, 2);
  f.self->request(sealed, 10s, seal_atom::value, true).receive([](int64_t) {}, [](caf::error& e) {
    FAIL(caf::to_string(e));
  });
  f.self->request(deleted, 10s, delete_atom::value).receive([](bool) {}, [](caf::error& e) {
    FAIL(caf::to_string(e));
  });
  f.self->send_exit(exited, caf::exit_reason::user_shutdown);
  f.self->wait_for(exited);
  answers a;
  append_direct(f.sys,
                {a.make(sealed, batch_of(1, "s"), true, "sealed"), a.make(deleted, batch_of(1, "d"), true, "deleted"),
                 a.make(exited, batch_of(1, "e"), false, "exited")},
                10s);
  REQUIRE(a.wait_for(3));
  CHECK(a.bases.empty());
  REQUIRE(a.errors.size() == 3);
  CHECK(static_cast<errc>(a.errors["sealed"].code()) == errc::partition_moved);
  CHECK(a.errors["deleted"]);
  CHECK(a.errors["exited"]);
  CHECK(f.values(sealed).empty());
}

TEST_CASE("read_loads answers every partition in order from its worker, and an error for a gone one",
          "[partition][direct_append]") {
  fixture f;
  std::vector<partition_actor> parts;
  for (int i = 0; i < 6; ++i) {
    parts.push_back(f.spawn("loads", -1, i));
    if (i > 0)
      CHECK(f.ask_int(parts.back(), append_atom::value, batch_of(i, "l"), true) == 0);
  }
  auto deleted = f.spawn("loads", -1, 6);
  f.self->request(deleted, 10s, delete_atom::value).receive([](bool) {}, [](caf::error& e) {
    FAIL(caf::to_string(e));
  });
  auto exited = f.spawn("loads", -1, 7);
  f.self->send_exit(exited, caf::exit_reason::user_shutdown);
  f.self->wait_for(exited);
  auto asked = parts;
  asked.push_back(deleted);
  asked.push_back(exited);
  std::promise<std::vector<partition_load>> got;
  read_loads(f.sys, asked, 10s, [&got](std::vector<partition_load>& loads) { got.set_value(std::move(loads)); });
  auto answer = got.get_future();
  REQUIRE(answer.wait_for(10s) == std::future_status::ready);
  auto loads = answer.get();
  REQUIRE(loads.size() == 8);
  for (size_t i = 0; i < 6; ++i) {
    INFO("partition " << i);
    CHECK(loads[i].error.empty());
    CHECK(loads[i].log_start == 0);
    CHECK(loads[i].log_end == static_cast<int64_t>(i));
    CHECK(loads[i].records_in == i);
    CHECK((loads[i].size_bytes > 0) == (i > 0));  // partition 0 never took a record
  }
  CHECK(loads[6].error == "the partition stopped");
  CHECK(loads[7].error == "the partition stopped");
}

TEST_CASE("a direct append to an actor that is no pool partition goes as one request", "[partition][direct_append]") {
  fixture f;
  auto fake = f.sys.spawn([]() -> partition_actor::behavior_type {
    return {
      [](append_atom, std::string&, bool) -> int64_t { return 42; },
      [](copy_atom, std::string&, bool) -> int64_t { return 0; },
      [](copy_atom, int64_t, std::string&, bool) -> int64_t { return 0; },
      [](reset_atom, int64_t) -> int64_t { return 0; },
      [](seal_atom, bool) -> int64_t { return 0; },
      [](seal_atom, bool, bool) -> int64_t { return 0; },
      [](read_atom, int64_t, int32_t) { return caf::make_result(std::string{}, int64_t{0}, int64_t{0}); },
      [](read_atom, int64_t, int32_t, bool) { return caf::make_result(std::string{}, int64_t{0}, int64_t{0}); },
      [](read_atom, int64_t, int32_t, bool, bool) {
        return caf::make_result(std::string{}, int64_t{0}, int64_t{0}, int64_t{0}, std::vector<int64_t>{});
      },
      [](lso_atom) { return caf::make_result(int64_t{0}, int64_t{0}, int64_t{0}); },
      [](marker_atom, int64_t, int16_t, bool, int32_t) { return int64_t{0}; },
      [](bounds_atom) { return caf::make_result(int64_t{0}, int64_t{0}, int64_t{0}); },
      [](time_lookup_atom, int64_t, bool) { return caf::make_result(int64_t{-1}, int64_t{-1}); },
      [](delete_atom) { return true; },
      [](repair_atom) { return std::string{}; },
      [](delete_records_atom, int64_t, bool) { return int64_t{0}; },
      [](config_atom, int64_t, int64_t, int64_t) { return true; },
      [](status_atom) { return std::string{"{}"}; },
    };
  });
  answers a;
  append_direct(f.sys, {a.make(fake, batch_of(1, "f"), true, "fake")}, 10s);
  REQUIRE(a.wait_for(1));
  CHECK(a.bases["fake"] == 42);
  caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
}

TEST_CASE("a direct append callback that throws does not stop its worker, a null destination fails at once",
          "[partition][direct_append]") {
  fixture f;
  auto p = f.spawn("throws", -1, 0);
  answers a;
  std::vector<direct_append> appends;
  appends.push_back(direct_append{p, batch_of(1, "t"), true, [](int64_t) { throw std::runtime_error("callback"); },
                                  [](const caf::error&) { throw std::runtime_error("callback"); }});
  appends.push_back(a.make(p, batch_of(1, "after"), true, "after"));
  appends.push_back(a.make(partition_actor{}, batch_of(1, "null"), true, "null"));
  append_direct(f.sys, std::move(appends), 10s);
  REQUIRE(a.wait_for(2));
  CHECK(a.bases["after"] == 1);  // the throwing append was appended first, at 0
  CHECK(a.errors.count("null") == 1);
  // The worker still serves.
  answers b;
  append_direct(f.sys, [&] {
    std::vector<direct_append> v;
    v.push_back(b.make(p, batch_of(1, "later"), true, "later"));
    return v;
  }(), 10s);
  REQUIRE(b.wait_for(1));
  CHECK(b.bases["later"] == 2);
  CHECK(f.values(p) == std::vector<std::string>{"t0", "after0", "later0"});
}

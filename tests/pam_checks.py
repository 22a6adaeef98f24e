"""Checks shared by the PAM device and system tests."""


def check_schedule(res, sched, beats):
    """Total cycles and each request's first output cycle equal the model's (the issue allows
    2%; the model replays the RTL schedule, so one cycle off is a failure)."""
    ph = res.phases[0]
    sched = [s for s in sched if s is not None]
    total = sched[-1][2] + 1
    assert ph.cycles == total, f"model {total}, RTL {ph.cycles}"
    outs = ph.out_stamps["o"]
    firsts = [outs[i * beats] for i in range(len(sched))]
    assert firsts == [first for _, first, _ in sched], f"first outputs: RTL {firsts}, model {sched}"

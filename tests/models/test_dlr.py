"""Is DLR (Gupta et al. 2022) right: its three implementations against each other in every mode, and each side against its spec
(the model's other checks: tests/impls/, properties/, `linrnn crosscheck`, `linrnn conform`)."""

KIND = "dlr"


def test_three_implementations_agree_in_every_mode(crosscheck_kind):
    crosscheck_kind(KIND)


def test_each_side_follows_the_spec(sides_follow_the_spec):
    sides_follow_the_spec(KIND)

"""Flat parameter vectors and their Q7.24 packing: round trips, element order, saturation counted (never wrapped)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from olaf.fixedpoint import GRAD_FRAC_BITS, INT32_MAX, INT32_MIN, grads_to_fixed, pack_q724, unpack_q724

RES = 2.0**-GRAD_FRAC_BITS


@given(st.lists(st.floats(min_value=-127.9, max_value=127.9, allow_nan=False), min_size=1, max_size=50))
def test_round_trip_within_half_a_resolution_step_and_same_as_the_scalar_encoder(values):
    raw, saturated = pack_q724(np.array(values))
    assert saturated == 0
    assert raw == grads_to_fixed(values)
    assert np.all(np.abs(unpack_q724(raw) - np.array(values)) <= RES / 2)


def test_saturation_is_counted_and_clamps_never_wraps():
    v = np.array([0.25, 128.0, -128.0, -128.0 - RES, 1e12, -np.inf, np.inf, 127.5, 128 - RES])
    raw, saturated = pack_q724(v)
    assert raw == [1 << 22, INT32_MAX, INT32_MIN, INT32_MIN, INT32_MAX, INT32_MIN, INT32_MAX,
                   round(127.5 * (1 << 24)), INT32_MAX]
    # 128.0, -128 - 2^-24, 1e12, -inf, +inf lie outside [-128, 128 - 2^-24]; -128 and 128 - 2^-24 do not
    assert saturated == 5
    assert all(INT32_MIN <= x <= INT32_MAX for x in raw)
    assert raw == grads_to_fixed(v)


def test_nan_is_refused_with_its_index():
    with pytest.raises(ValueError, match="element 2 of 3"):
        pack_q724(np.array([0.0, 1.0, np.nan]))


@pytest.mark.train
def test_network_parameters_flatten_in_module_order_and_round_trip():
    import torch

    from olaf.rl.flat import get_flat_grad, get_flat_params, set_flat_params
    from olaf.rl.network import ActorCritic, param_count

    net = ActorCritic(8, 4, (24,))
    assert net.num_params == param_count(8, 4, (24,)) == 8 * 24 + 24 + 24 * 4 + 4 + 24 + 1 == 341
    flat = get_flat_params(net)
    # element order: trunk weight (24, 8) row-major, trunk bias, policy weight and bias, value weight and bias
    assert flat[:8].tolist() == net.trunk[0].weight[0].double().tolist()
    assert flat[192:216].tolist() == net.trunk[0].bias.double().tolist()
    assert flat[-1] == net.v.bias.detach().double().item()
    # through the wire format and back: within Q7.24 resolution
    raw, saturated = pack_q724(flat)
    assert saturated == 0
    set_flat_params(net, unpack_q724(raw))
    assert np.all(np.abs(get_flat_params(net) - flat) <= RES)  # float32 storage adds < 1 ulp at |w| < 2
    with pytest.raises(ValueError, match="341 parameters"):
        set_flat_params(net, np.zeros(5))
    net(torch.zeros(2, 8))[1].sum().backward()
    g = get_flat_grad(net)
    assert g.shape == (341,) and g[-1] == 2.0  # d(sum of 2 values)/d(value bias)


@pytest.mark.train
def test_the_separate_network_is_sb3s_shape_and_flattens_policy_mlp_value_mlp_then_heads():
    """`--net sb3`: Stable-Baselines3's MlpPolicy shape (policy and value MLPs of 64, 64), 9,797
    parameters on LunarLander; the value does not depend on the policy MLP and vice versa."""
    import torch

    from olaf.rl.flat import get_flat_params
    from olaf.rl.network import ActorCritic, param_count

    net = ActorCritic(8, 4, (64, 64), "separate")
    assert net.num_params == param_count(8, 4, (64, 64), "separate") == 9797
    flat = get_flat_params(net)
    mlp = (8 + 1) * 64 + (64 + 1) * 64
    assert flat[:8].tolist() == net.trunk[0].weight[0].double().tolist()               # policy MLP first
    assert flat[mlp:mlp + 8].tolist() == net.vf_trunk[0].weight[0].double().tolist()  # then the value MLP
    assert flat[2 * mlp:2 * mlp + 64].tolist() == net.pi.weight[0].double().tolist()   # then the heads
    assert flat[-1] == net.v.bias.detach().double().item()
    net(torch.zeros(3, 8))[1].sum().backward()
    assert net.trunk[0].weight.grad is None or not net.trunk[0].weight.grad.any()       # value: value MLP only
    with pytest.raises(ValueError, match="arch='wide'"):
        ActorCritic(8, 4, (4,), "wide")

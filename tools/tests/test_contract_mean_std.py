"""tools/contract.py agrees with the C++ (src/model_contract.cpp): input.mean/std are always null."""
import pytest

from tools.contract import make_contract


def test_mean_and_std_are_null_in_every_contract():
    c = make_contract("m", colorspace="sRGB", multiple=14, size_hw=(518, 518), kind="relative_inverse_depth")
    assert c["input"]["mean"] is None and c["input"]["std"] is None


@pytest.mark.parametrize("mean, std", [([0.485, 0.456, 0.406], None), (None, [0.229, 0.224, 0.225])])
def test_a_contract_asking_the_caller_to_normalise_is_refused(mean, std):
    with pytest.raises(ValueError, match="mean/std must be null"):
        make_contract("m", colorspace="sRGB", multiple=14, size_hw=(518, 518), kind="relative_inverse_depth",
                      mean=mean, std=std)

"""tools/review.py: which end of the colour range is near, from the EXR header depthbatch wrote."""
from tools.review import larger_is_nearer_of


def test_the_key_depthbatch_writes_decides():
    # depthbatch/larger_is_nearer (DepthNormalizer::larger_is_nearer) wins over anything derived.
    assert larger_is_nearer_of({"depthbatch/larger_is_nearer": "1", "depthbatch/depth_convention": "metric"})
    assert not larger_is_nearer_of({"depthbatch/larger_is_nearer": "0", "depthbatch/depth_convention": "inverse"})
    assert larger_is_nearer_of({"depthbatch/larger_is_nearer": b"1".decode()})


def test_older_exrs_without_the_key_are_derived_from_the_convention():
    assert larger_is_nearer_of({"depthbatch/depth_convention": "inverse"})
    assert not larger_is_nearer_of({"depthbatch/depth_convention": "metric"})
    assert larger_is_nearer_of({"depthbatch/depth_convention": "normalized", "depthbatch/near_is": "1 (near = 1, far = 0)"})
    assert not larger_is_nearer_of({"depthbatch/depth_convention": "normalized", "depthbatch/near_is": "0 (near = 0, far = 1)"})
    assert larger_is_nearer_of({"depthbatch/depth_convention": "raw",
                                "depthbatch/model_output_kind": "relative_inverse_depth"})
    assert not larger_is_nearer_of({"depthbatch/depth_convention": "raw", "depthbatch/model_output_kind": "metric_depth"})
    assert not larger_is_nearer_of({})

"""Lie groups: SO(3) (:mod:`.so3`), the matrix-Lie-group interface with SO(n), SE(2), SE(3)
(:mod:`.groups`), and retractions (:mod:`.retraction`)."""
from . import groups, so3
from .groups import SE, SO, MatrixLieGroup, group
from .retraction import Retraction, cayley, exponential, get_retraction
from .so3 import (Ad, Ad_star, ad, ad_star, cayley_inv, coadjoint, dcay, dcay_inv, dcay_left,
                  dcay_left_inv, dexp, dexp_inv, dexp_left, dexp_left_inv, distance, exp, hat, log,
                  orthogonality_defect, vee)

__all__ = ["so3", "groups", "MatrixLieGroup", "SO", "SE", "group", "Retraction", "cayley", "exponential",
           "get_retraction", "hat", "vee", "exp", "log", "cayley_inv", "dcay", "dcay_inv", "dcay_left", "dcay_left_inv", "dexp",
           "dexp_inv", "dexp_left", "dexp_left_inv", "Ad", "ad", "ad_star", "Ad_star", "coadjoint",
           "orthogonality_defect", "distance"]

// SPDX-License-Identifier: Apache-2.0
#include "cartpole.h"

#include <cmath>
#include <numbers>

namespace policy_gradient {
namespace {

constexpr double kGravity = 9.8;
constexpr double kCartMass = 1.0;
constexpr double kPoleMass = 0.1;
constexpr double kTotalMass = kCartMass + kPoleMass;
constexpr double kHalfPoleLength = 0.5;  // Gym's "length" is half the pole
constexpr double kPoleMassLength = kPoleMass * kHalfPoleLength;
constexpr double kForce = 10.0;
constexpr double kTau = 0.02;  // seconds per step
constexpr double kThetaLimit = 12 * 2 * std::numbers::pi / 360;
constexpr double kXLimit = 2.4;

}  // namespace

CartPole::Observation CartPole::reset(Random& random) {
  x_ = random.uniform(-0.05, 0.05);
  xVelocity_ = random.uniform(-0.05, 0.05);
  theta_ = random.uniform(-0.05, 0.05);
  thetaVelocity_ = random.uniform(-0.05, 0.05);
  steps_ = 0;
  return observe();
}

// The frictionless equations of motion of Barto et al., as Gym implements them, advanced by one
// explicit Euler step: positions move with the old velocities, then velocities with the new
// accelerations.
CartPole::Step CartPole::step(int action) {
  const double force = action == 1 ? kForce : -kForce;
  const double cosTheta = std::cos(theta_);
  const double sinTheta = std::sin(theta_);
  const double temp =
      (force + kPoleMassLength * thetaVelocity_ * thetaVelocity_ * sinTheta) / kTotalMass;
  const double thetaAcceleration =
      (kGravity * sinTheta - cosTheta * temp) /
      (kHalfPoleLength * (4.0 / 3.0 - kPoleMass * cosTheta * cosTheta / kTotalMass));
  const double xAcceleration = temp - kPoleMassLength * thetaAcceleration * cosTheta / kTotalMass;

  x_ += kTau * xVelocity_;
  xVelocity_ += kTau * xAcceleration;
  theta_ += kTau * thetaVelocity_;
  thetaVelocity_ += kTau * thetaAcceleration;
  ++steps_;

  const bool fell = std::abs(x_) > kXLimit || std::abs(theta_) > kThetaLimit;
  // Gym v0 pays the reward of the step that ends the episode too, so returns count steps.
  return {observe(), 1.0f, fell || steps_ >= kMaxSteps};
}

CartPole::Observation CartPole::observe() const {
  return {static_cast<float>(x_), static_cast<float>(xVelocity_), static_cast<float>(theta_),
          static_cast<float>(thetaVelocity_)};
}

}  // namespace policy_gradient

# A CleanRL-shaped training script (ppo.py's structure and its logging calls verbatim), with
# numpy in place of torch and gym: a linear softmax policy on a toy chain environment.
# The only line changed from a TensorBoard script is the SummaryWriter import below; with
# `from torch.utils.tensorboard import SummaryWriter` or `from tensorboardX import ...` the
# script runs unchanged under goggles_io.compat.tensorboard.patch() (docs/coming-from-tensorboard-or-wandb.md).
#
# Usage: python examples/cleanrl_ppo.py [--seed 1] [--total-timesteps 8192]
#        then: telemetry ui runs
import argparse
import os
import random
import time

import numpy as np

from goggles_io.compat.tensorboard import SummaryWriter


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exp-name", type=str, default=os.path.basename(__file__)[: -len(".py")])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--env-id", type=str, default="Chain-v0")
    parser.add_argument("--total-timesteps", type=int, default=8192)
    parser.add_argument("--learning-rate", type=float, default=2.5e-4)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--num-steps", type=int, default=128)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--clip-coef", type=float, default=0.2)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    args = parser.parse_args()
    args.batch_size = int(args.num_envs * args.num_steps)
    args.num_iterations = args.total_timesteps // args.batch_size
    return args


class ChainEnvs:
    """num_envs copies of a 10-state chain: action 1 moves right (+1 at the end), 0 resets."""

    def __init__(self, num_envs, rng):
        self.rng = rng
        self.pos = np.zeros(num_envs, dtype=int)
        self.ret = np.zeros(num_envs)
        self.len = np.zeros(num_envs, dtype=int)

    def obs(self):
        return np.eye(10)[self.pos]

    def step(self, actions):
        slip = self.rng.random(len(actions)) < 0.1
        moved = np.where((actions == 1) & ~slip, self.pos + 1, 0)
        reward = (moved == 9).astype(float) + 0.01 * moved
        self.ret += reward
        self.len += 1
        done = (moved == 9) | (self.len >= 50)
        finished = [{"episode": {"r": self.ret[i], "l": self.len[i]}} if done[i] else None
                    for i in range(len(actions))]  # fmt: skip
        self.pos = np.where(done, 0, moved)
        self.ret[done] = 0.0
        self.len[done] = 0
        return self.obs(), reward, done, {"final_info": finished} if done.any() else {}


def softmax(logits):
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


if __name__ == "__main__":
    args = parse_args()
    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    writer = SummaryWriter(f"runs/{run_name}")
    writer.add_text(
        "hyperparameters",
        "|param|value|\n|-|-|\n%s" % ("\n".join([f"|{key}|{value}|" for key, value in vars(args).items()])),
    )  # fmt: skip

    random.seed(args.seed)
    np.random.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    envs = ChainEnvs(args.num_envs, rng)
    weights = np.zeros((10, 2))
    values = np.zeros(10)

    global_step = 0
    start_time = time.time()
    next_obs = envs.obs()
    for iteration in range(1, args.num_iterations + 1):
        obs, actions, logprobs, rewards = [], [], [], []
        for step in range(0, args.num_steps):
            global_step += args.num_envs
            probs = softmax(next_obs @ weights)
            action = (rng.random(args.num_envs) < probs[:, 1]).astype(int)
            obs.append(next_obs)
            actions.append(action)
            logprobs.append(np.log(probs[np.arange(args.num_envs), action]))
            next_obs, reward, done, infos = envs.step(action)
            rewards.append(reward)
            if "final_info" in infos:
                for info in infos["final_info"]:
                    if info and "episode" in info:
                        print(f"global_step={global_step}, episodic_return={info['episode']['r']}")
                        writer.add_scalar(
                            "charts/episodic_return", info["episode"]["r"], global_step
                        )
                        writer.add_scalar(
                            "charts/episodic_length", info["episode"]["l"], global_step
                        )

        b_obs = np.concatenate(obs)
        b_actions = np.concatenate(actions)
        b_logprobs = np.concatenate(logprobs)
        b_returns = np.concatenate(rewards) / (1 - args.gamma)
        b_values = b_obs @ values
        advantages = b_returns - b_values
        probs = softmax(b_obs @ weights)
        newlogprob = np.log(probs[np.arange(len(b_actions)), b_actions])
        logratio = newlogprob - b_logprobs
        ratio = np.exp(logratio)
        old_approx_kl = (-logratio).mean()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfracs = [float((np.abs(ratio - 1.0) > args.clip_coef).mean())]
        pg_loss = np.maximum(-advantages * ratio, -advantages * np.clip(ratio, 0.8, 1.2)).mean()
        entropy_loss = -(probs * np.log(probs)).sum(axis=1).mean()
        v_loss = 0.5 * ((b_values - b_returns) ** 2).mean()
        explained_var = (
            np.nan
            if np.var(b_returns) == 0
            else 1 - np.var(b_returns - b_values) / np.var(b_returns)
        )
        onehot = np.eye(2)[b_actions]
        weights += args.learning_rate * b_obs.T @ ((onehot - probs) * advantages[:, None])
        values += args.learning_rate * b_obs.T @ advantages

        writer.add_scalar("charts/learning_rate", args.learning_rate, global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
        writer.add_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        print("SPS:", int(global_step / (time.time() - start_time)))
        writer.add_scalar("charts/SPS", int(global_step / (time.time() - start_time)), global_step)

    writer.close()

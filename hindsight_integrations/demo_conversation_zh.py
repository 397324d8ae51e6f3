"""The conversation `hindsight demo --lang zh` plays: the English demo's project, told in Chinese.

The same two sessions and the same key turns as ``demo_conversation.py`` (a preference, the
project's database and its correction, a deadline, a meeting, a test order number), written
as a Chinese-speaking team would write them, with the English words such a team mixes in
(MySQL, PostgreSQL, CI, PR). Around them runs everyday chatter from seeded templates, so
every run writes the same history. One question is asked in English about these Chinese
turns: the cross-lingual case a multilingual model answers and an English-only one cannot.
"""

from __future__ import annotations

from datetime import date

from .demo_conversation import Chatter, DemoScript, KeyTurns, Session, Turn, two_sessions

_COMPONENTS = ["跟踪页面", "快递回调", "订单列表", "状态标签", "管理后台", "邮件摘要"]
_PEOPLE = ["小王", "李娜", "陈刚", "阿杰", "周敏"]
_CHATTER: list[tuple[str, str]] = [
    ("{c}的 CI 又因为一个不稳定的快照测试挂了。", "把快照里的时钟固定住，快照不稳大多是时间的问题。"),
    ("{p}在{c}的 PR 上留了{n}条评论。", "小的评论合成一个后续提交就行。"),
    ("我把{c}模块改了个名字，导入读起来顺一些。", "好，旧名字留作别名，保留一个版本。"),
    ("{c}在测试机上渲染慢了{n}毫秒。", "先用降速 CPU 的预设做一次性能分析。"),
    ("{p}问{c}加载时该用转圈还是骨架屏。", "骨架屏：加载时布局不会跳。"),
    ("我把{c}的测试拆成了{n}个小文件。", "不错，文件小了，失败信息更好读。"),
    ("{c}的日志在 info 级别太吵了。", "把每个请求的那几行挪到 debug。"),
    ("{p}发现{c}文案里有个错别字，已经改好了。", "替我谢谢他，改文案是最划算的。"),
    ("{c}的 docker 镜像涨到了{n} MB。", "换个精简的基础镜像，再用多阶段构建，能减一半。"),
    ("我给{c}的调用加了带抖动的重试。", "总的重试时间也要封顶，不然一个慢的合作方会拖住整个队列。"),
    ("{p}希望{c}的颜色跟新的品牌色板一致。", "把色板放进 CSS 变量，改一处就全改了。"),
    ("{c}的分页在翻页的边界上会漏掉一条。", "别用偏移量，改用 (created_at, id) 做游标。"),
    ("我写了个小脚本，给{c}造了{n}条假订单。", "放进仓库吧，新来的同事会用得上。"),
    ("lint 检查说{c}里有几行太长了。", "交给格式化工具，别再手动换行了。"),
    ("{p}休假到下周，{c}的评审只能等一等。", "先找别人过第一遍。"),
    ("{c}显示的是 UTC 时间，店员看着很迷糊。", "按店铺的时区显示，存储还是用 UTC。"),
    ("我把{c}里的 HTTP 客户端升到了最新的小版本。", "合并之前先跑一遍契约测试。"),
    ("{c}的报错只写了一句“出错了”。", "要说清楚哪里失败了，用户下一步能做什么。"),
    ("{p}建议{c}上线时用功能开关。", "每家店一个开关，可以一家一家地回滚。"),
    ("{c}的测试覆盖率现在是百分之{n}。", "先把错误分支覆盖到，再去追这个数字。"),
    ("{p}和我结对修了{c}的无障碍问题。", "只用键盘检查一遍焦点顺序。"),
    ("网络断开的时候，{c}会发出{n}个重复事件。", "给每个事件一个 id，重复的直接忽略。"),
    ("我把{c}的配置挪到了环境变量里。", "每一项都写上默认值。"),
    ("{c}在 CI 上构建要{n}秒了。", "在两次运行之间缓存依赖。"),
    ("{p}提议给{c}做深色模式。", "如果只是换色板变量，值得做。"),
    ("我从{c}里删掉了{n}行没用的代码。", "删代码是最好的重构。"),
    ("订单里一件商品都没有的时候，{c}会崩。", "把空订单当成正常状态，再补一个测试。"),
    ("{p}在写{c}的发布说明。", "先写店员那边会有什么变化。"),
    ("{c}的字体在 Windows 上看着发虚。", "查一下字体平滑的设置和加载的字重。"),
    ("我给{c}接上了错误追踪。", "按原因给错误分组，别按报错文字分。"),
]


def _opening(deadline: date) -> list[Turn]:
    day = f"{deadline.month}月{deadline.day}日（周{'一二三四五六日'[deadline.weekday()]}）"
    return [
        Turn("user", "你好！", key=True),
        Turn("assistant", "你好！今天需要我帮什么忙？"),
        Turn("user", "我喜欢简洁的回答，代码示例请一律用 Python。", key=True),
        Turn("assistant", "明白：回答简洁，示例用 Python。"),
        Turn("user", "我们在给一家自行车店做订单跟踪服务，数据库用的是 MySQL。", key=True),
        Turn("assistant", "了解。这个服务第一步要做什么？"),
        Turn("user", f"第一个里程碑是订单状态接口，截止日期是{day}。", key=True),
        Turn("assistant", f"记下了：先做订单状态接口，{day}截止。"),
    ]


_KEYS = KeyTurns(
    opening=_opening,
    end_of_first=[Turn("user", "好的，谢谢", key=True)],
    start_of_second=[
        Turn("user", "更正一下：项目其实用的是 PostgreSQL，不是 MySQL，上周已经迁移过去了。", key=True),
        Turn("assistant", "谢谢更正：那就是 PostgreSQL。"),
    ],
    middle_of_second=[
        Turn("user", "我明天上午十点和设计团队开会，讨论跟踪页面。", key=True),
        Turn("assistant", "祝会议顺利。"),
        Turn("user", "测试客户的订单号是 ORD-7731-KX，写示例的时候就用它。", key=True),
        Turn("assistant", "好的，示例里用 ORD-7731-KX。"),
    ],
    end_of_second=[Turn("user", "好嘞", key=True)],
)


def build_sessions(today: date, *, chatter_per_session: tuple[int, int] = (120, 60), seed: int = 7) -> list[Session]:
    """The Chinese demo's two sessions, dated on the Monday and Wednesday of the week before ``today``."""
    chatter = Chatter(_CHATTER, _COMPONENTS, _PEOPLE)
    return two_sessions(today, _KEYS, chatter, chatter_per_session=chatter_per_session, seed=seed)


CHINESE = DemoScript(
    language="zh",
    build_sessions=build_sessions,
    questions=(
        "项目用的是什么数据库？",
        "写一个查询测试客户订单的例子。",
        "你的回答应该是什么风格？",
        "第一个里程碑什么时候截止？",
        "Which database does the project use?",
    ),
    off_topic="秘鲁的首都是哪里？",
    correction_question="项目用的是什么数据库？",
    current_marker="PostgreSQL",
)
"""The Chinese demo; its last question is English, asked about Chinese turns."""

__all__ = ["CHINESE", "build_sessions"]
